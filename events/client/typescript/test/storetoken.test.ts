// Read-your-writes tokens: `skills push --json` prints the store's epoch
// and the token "<epoch>:<revision>"; a client holding it asks for that
// store in every trigger, and a token of buckets since recreated is
// answered unavailable at once, saying so.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";

import {
  BadPayloadError,
  connect,
  formatStoreToken,
  parseStoreToken,
  skillTool,
  UnavailableError,
  type Client,
  type Decision,
} from "../src/index.js";
import { poll, removeTree, Serve, tempDir, writeSkill } from "./helpers.js";

let serve: Serve;
let nc: NatsConnection;
let work: string;
before(async () => {
  serve = await Serve.start();
  nc = await serve.conn();
  work = tempDir("storetoken");
});
after(async () => {
  await nc?.close();
  await serve?.stop();
  if (work) removeTree(work);
});

interface Pushed {
  revision: number;
  epoch: string;
  token: string;
}

async function push(name: string, description: string): Promise<Pushed> {
  const src = join(work, name);
  writeSkill(src, name, description);
  const out = JSON.parse(await serve.cli("skills", "push", src, "--json")) as Pushed;
  assert.match(out.epoch, /^[0-9a-f]{16}$/);
  assert.ok(out.revision > 0);
  assert.equal(out.token, `${out.epoch}:${out.revision}`);
  return out;
}

let n = 0;
function step(c: Client): Promise<Decision> {
  n++;
  return c.preStep({ session: `tok-${n}`, step: "1", tools: [skillTool()] }, { timeoutMs: 10_000 });
}

test("parseStoreToken reads what push prints, and nothing else", () => {
  assert.deepEqual(parseStoreToken("5d41402abc4b2a76:42"), { epoch: "5d41402abc4b2a76", revision: 42 });
  assert.deepEqual(parseStoreToken("42"), { epoch: "", revision: 42 });
  assert.equal(formatStoreToken({ epoch: "e1", revision: 7 }), "e1:7");
  assert.equal(formatStoreToken({ epoch: "", revision: 7 }), "7");
  for (const bad of ["", ":1", "e:", "e:-1", "e:x", "a b:1", `${"e".repeat(65)}:1`, "e:1:2", "1e3"]) {
    assert.throws(() => parseStoreToken(bad), TypeError, bad);
  }
});

test("the floor rises within an epoch, and a token of another epoch replaces it", async () => {
  const c = await connect({ connection: nc, minStoreRevision: 5 });
  try {
    const steps: [string | { epoch: string; revision: number }, string][] = [
      ["3", "5"],
      ["e1:3", "e1:3"],
      ["e1:2", "e1:3"],
      ["9", "e1:9"],
      ["e2:1", "e2:1"],
    ];
    for (const [require, want] of steps) {
      c.requireStore(require);
      assert.equal(formatStoreToken(c.storeFloor()), want, `after ${JSON.stringify(require)}`);
    }
  } finally {
    await c.close();
  }
  await assert.rejects(connect({ connection: nc, storeToken: "no token" }), BadPayloadError);
  const d = await connect({ connection: nc, storeToken: "e1:7" });
  assert.deepEqual(d.storeFloor(), { epoch: "e1", revision: 7 });
  await d.close();
});

test("a token of recreated buckets is answered unavailable at once; the new push's token is served", async () => {
  const first = await push("s-old", "From the first buckets.");
  const c = await connect({ connection: nc, storeToken: first.token });
  try {
    const d = await step(c);
    assert.equal(d.outcome, "appended");
    assert.equal(d.catalog?.source.view?.epoch, first.epoch);
    assert.ok(d.catalog?.source.entries?.some((e) => e.name === "s-old"));

    const jsm = await jetstreamManager(nc);
    await jsm.streams.delete("KV_SKILLS");
    await jsm.streams.delete("OBJ_SKILLS");
    const again = await push("s-new", "From the recreated buckets.");
    assert.notEqual(again.epoch, first.epoch);

    // serve loads the new buckets by itself within seconds; from then on
    // the old token is refused, naming both epochs.
    const want = `store epoch ${first.epoch} is not this store's (${again.epoch})`;
    await poll("the old token to be refused", async () => {
      await assert.rejects(step(c), (err: unknown) => err instanceof UnavailableError && err.message.includes(want));
    });
    await assert.rejects(
      c.callSkill({ session: "tok-call", call: "c1", args: { name: "s-new" } }, { timeoutMs: 10_000 }),
      (err: unknown) => err instanceof UnavailableError && err.message.includes(want),
    );

    c.requireStore(again.token);
    assert.deepEqual(c.storeFloor(), { epoch: again.epoch, revision: again.revision });
    const d2 = await step(c);
    assert.equal(d2.catalog?.source.view?.epoch, again.epoch);
    const r = await c.callSkill({ session: "tok-call-2", call: "c1", args: { name: "s-new" } }, { timeoutMs: 10_000 });
    assert.equal(r.isError, false);
    // A trigger's own epoch wins over the floor's.
    await assert.rejects(
      c.preStep({ session: "tok-own", step: "1", tools: [skillTool()], minStoreEpoch: first.epoch }, { timeoutMs: 10_000 }),
      (err: unknown) => err instanceof UnavailableError && err.message.includes(want),
    );
  } finally {
    await c.close();
  }
});
