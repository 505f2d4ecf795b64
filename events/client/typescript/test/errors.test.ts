// Errors, garbage and hostile answers, against a real serve.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { encode } from "@msgpack/msgpack";
import { headers, type NatsConnection } from "@nats-io/transport-node";

import {
  BadPayloadError,
  ClosedError,
  connect,
  ExpiredError,
  MaterializeError,
  RejectedError,
  skillTool,
  TimeoutError,
  TooLargeError,
  UnavailableError,
  type Client,
} from "../src/index.js";
import { poll, removeTree, Serve, sessionLog, tempDir, type Stored } from "./helpers.js";

let serve: Serve;
let nc: NatsConnection;
before(async () => {
  // Processors answer on the default _INBOX. and on wk.ts., not on fake.
  serve = await Serve.start(["--reply-prefix", "_INBOX.", "--reply-prefix", "wk.ts."]);
  nc = await serve.conn();
});
after(async () => {
  await nc?.close();
  await serve?.stop();
});

const tools = () => [{ name: "bash", owner: "agent" }, skillTool()];

test("inboxPrefix: the client's inbox is under its own prefix, and a processor answers there", async () => {
  const c = await connect({ servers: serve.url, inboxPrefix: "wk.ts" });
  try {
    const d = await c.preStep({ session: "inbox", step: "1", cwd: serve.cwd, tools: tools() }, { timeoutMs: 20_000 });
    assert.equal(d.outcome, "appended");
    const [trigger] = await sessionLog(nc, "inbox");
    assert.match(trigger!.header("Reply-Inbox"), /^wk\.ts\.[A-Za-z0-9]+\.\d+$/);
  } finally {
    await c.close();
  }
});

test("deadlines: a trigger past its deadlineMs is ExpiredError and appends nothing; timeoutMs becomes deadlineMs", async () => {
  const c = await connect({ servers: serve.url });
  try {
    const past = Date.now() - 60_000;
    await assert.rejects(
      c.preStep({ session: "expired", step: "1", cwd: serve.cwd, tools: tools(), deadlineMs: past }, { timeoutMs: 20_000 }),
      (err: unknown) => err instanceof ExpiredError && err.decision?.outcome === "expired",
    );
    await assert.rejects(
      c.callSkill({ session: "expired", call: "c", args: { name: "a-skill" }, deadlineMs: past }, { timeoutMs: 20_000 }),
      (err: unknown) => err instanceof ExpiredError && err.result?.error?.code === "expired",
    );
    const log = await sessionLog(nc, "expired");
    assert.deepEqual(log.map((m) => m.subject), ["ev.expired.agent.pre-step", "ev.expired.tool.call.skill"]);

    const before = Date.now();
    await c.preStep({ session: "deadline", step: "1", cwd: serve.cwd, tools: tools() }, { timeoutMs: 15_000 });
    const [t] = await sessionLog(nc, "deadline");
    const { decode } = await import("@msgpack/msgpack");
    const ps = decode(t!.data) as { deadlineMs: number };
    assert.ok(ps.deadlineMs >= before + 15_000 && ps.deadlineMs <= Date.now() + 15_000, `deadlineMs ${ps.deadlineMs}`);
  } finally {
    await c.close();
  }
});

test("a trigger the processor refuses is RejectedError with the answer", async () => {
  const c = await connect({ servers: serve.url, encoding: "json" });
  try {
    await assert.rejects(
      c.preStep({ session: "rejected", step: "1", cwd: "relative/dir", tools: tools() }, { timeoutMs: 20_000 }),
      (err: unknown) => err instanceof RejectedError && err.code === "bad_request" && err.decision?.outcome === "rejected",
    );
    await assert.rejects(
      c.callSkill({ session: "rejected", call: "c", cwd: "relative/dir", args: { name: "a-skill" } }, { timeoutMs: 20_000 }),
      (err: unknown) => err instanceof RejectedError && err.result?.error?.code === "bad_request",
    );
  } finally {
    await c.close();
  }
});

test("no answer: TimeoutError after timeoutMs or an abort; ClosedError when closed", async () => {
  const c = await connect({ servers: serve.url, prefix: "nobody", retryIntervalMs: 50 });
  try {
    await assert.rejects(c.preStep({ session: "s", step: "1", tools: [] }, { timeoutMs: 300 }), TimeoutError);
    const ac = new AbortController();
    const p = c.callSkill({ session: "s", call: "1", args: { name: "x" } }, { signal: ac.signal });
    ac.abort(new Error("user gave up"));
    await assert.rejects(p, (err: unknown) => err instanceof TimeoutError && (err.cause as Error).message === "user gave up");
    const waiting = c.preStep({ session: "s", step: "2", tools: [] });
    await c.close();
    await assert.rejects(waiting, ClosedError);
    await assert.rejects(c.preStep({ session: "s", step: "3", tools: [] }), ClosedError);
    await assert.rejects(c.append("s", "message.user", {}), ClosedError);
  } finally {
    await c.close();
  }
});

describe("garbage input is refused before anything is sent, naming the field", () => {
  let c: Client;
  before(async () => {
    c = await connect({ servers: serve.url });
  });
  after(async () => {
    await c.close();
  });
  const cases: [string, () => Promise<unknown>, string][] = [
    ["bad session", () => c.preStep({ session: "a b", step: "1", tools: [] }), "session"],
    ["empty session", () => c.preStep({ session: "", step: "1", tools: [] }), "session"],
    ["empty step", () => c.preStep({ session: "garbage", step: "", tools: [] }), "step"],
    ["step too long", () => c.preStep({ session: "garbage", step: "é".repeat(200), tools: [] }), "step"],
    ["control character", () => c.preStep({ session: "garbage", step: "a\nb", tools: [] }), "step"],
    ["step of wrong type", () => c.preStep({ session: "garbage", step: {} as never, tools: [] }), "step"],
    ["tools missing", () => c.preStep({ session: "garbage", step: "1" } as never), "tools"],
    ["tool without name", () => c.preStep({ session: "garbage", step: "1", tools: [{ name: "", owner: "x" }] }), "tools[0].name"],
    ["negative deadline", () => c.preStep({ session: "garbage", step: "1", tools: [], deadlineMs: -1 }), "deadlineMs"],
    ["bad project", () => c.preStep({ session: "garbage", step: "1", tools: [], project: "a/b" }), "project"],
    ["relative resourceDir", () => c.preStep({ session: "garbage", step: "1", tools: [], resourceDir: "rel" }), "resourceDir"],
    ["unclean resourceDir", () => c.callSkill({ session: "garbage", call: "1", args: { name: "x" }, resourceDir: "/a/../b" }), "resourceDir"],
    ["version 2", () => c.preStep({ session: "garbage", step: "1", tools: [], v: 2 as never }), "v"],
    ["no args", () => c.callSkill({ session: "garbage", call: "1" } as never), "args"],
    ["args.name not a string", () => c.callSkill({ session: "garbage", call: "1", args: { name: 7 as never } }), "args.name"],
    ["empty call", () => c.callSkill({ session: "garbage", call: "", args: { name: "x" } }), "call"],
    ["not an object", () => c.preStep(null as never), ""],
    ["compaction without retainFrom", () => c.compact({ session: "garbage" } as never), "retainFrom"],
    ["negative keep", () => c.compact({ session: "garbage", retainFrom: 1, keep: [-1] }), "keep[0]"],
    ["append to a bad session", () => c.append("x.y", "message.user", {}), "session"],
    ["append with a wildcard kind", () => c.append("garbage", "message.*", {}), "kind"],
    ["append with an empty kind", () => c.append("garbage", "", {}), "kind"],
  ];
  for (const [name, f, field] of cases) {
    test(name, async () => {
      await assert.rejects(f(), (err: unknown) => err instanceof BadPayloadError && err.field === field && err.message.length > 0);
    });
  }
  test("nothing of them reached the stream", async () => {
    assert.deepEqual(await sessionLog(nc, "garbage"), []);
  });
  test("an integer id means its decimal text", async () => {
    const d = await c.preStep({ session: "intid", step: 12, cwd: serve.cwd, tools: tools() }, { timeoutMs: 20_000 });
    assert.equal(d.step, "12");
  });
});

test("garbage options are refused", async () => {
  const bad: [string, Record<string, unknown>][] = [
    ["prefix", { prefix: "a..b" }],
    ["prefix", { prefix: ">" }],
    ["encoding", { encoding: "xml" }],
    ["retryIntervalMs", { retryIntervalMs: 0 }],
    ["maxAttempts", { maxAttempts: -1 }],
    ["maxPending", { maxPending: 0 }],
    ["inboxPrefix", { inboxPrefix: "$SYS" }],
    ["inboxPrefix", { inboxPrefix: "ev.mine" }],
    ["inboxPrefix", { inboxPrefix: "a b" }],
    ["skillObjects", { skillObjects: "" }],
  ];
  for (const [field, opts] of bad) {
    await assert.rejects(connect({ servers: serve.url, ...opts }), (err: unknown) => err instanceof BadPayloadError && err.field === field, field);
  }
});

/** Starts a request whose trigger no processor answers (its inbox prefix is not one they answer on) and returns where to forge answers. */
async function pending<T>(c: Client, sid: string, start: () => Promise<T>): Promise<{ result: Promise<T>; trigger: Stored; inbox: string }> {
  const result = start();
  void result.catch(() => {});
  const trigger = await poll("trigger stored", async () => {
    const [t] = await sessionLog(nc, sid);
    if (!t) throw new Error("not yet");
    return t;
  });
  void c;
  return { result, trigger, inbox: trigger.header("Reply-Inbox") };
}

function send(subject: string, body: unknown, contentType = "application/msgpack"): void {
  const h = headers();
  h.set("Content-Type", contentType);
  nc.publish(subject, body instanceof Uint8Array ? body : encode(body), { headers: h });
}

describe("hostile answers", () => {
  test("answers not matching the request are dropped and counted; the matching one is taken", async () => {
    const c = await connect({ servers: serve.url, inboxPrefix: "fake.worker", retryIntervalMs: 60_000 });
    try {
      const sid = "forged";
      const { result, trigger, inbox } = await pending(c, sid, () =>
        c.preStep({ session: sid, step: "1", tools: [] }, { timeoutMs: 30_000 }),
      );
      assert.match(inbox, /^fake\.worker\./);
      const seq = trigger.seq;
      const good = { v: 1, session: sid, step: "1", triggerSeq: seq, outcome: "unchanged", catalogSeq: 5 };
      send(inbox, Uint8Array.of(0xc1, 0xff, 0x00)); // undecodable
      send(inbox, encode(good), "text/plain"); // unknown content type
      send(inbox, { ...good, session: "other" }); // another session
      send(inbox, { ...good, step: "2" }); // another step
      send(inbox, { ...good, triggerSeq: seq + 1000 }); // not an attempt of this request
      send(inbox, { ...good, v: 2 }); // another version
      send(inbox, { ...good, triggerSeq: "x" }); // malformed
      send(inbox.replace(/\d+$/, "999999"), good); // no request waits there
      await poll("garbage dropped", async () => assert.equal(c.stats().droppedAnswers, 8));
      send(inbox, good);
      const d = await result;
      assert.equal(d.outcome, "unchanged");
      assert.equal(d.triggerSeq, seq);
      assert.equal(c.stats().droppedAnswers, 8);
    } finally {
      await c.close();
    }
  });

  test("unavailable and too_large decisions, unavailable results", async () => {
    const c = await connect({ servers: serve.url, inboxPrefix: "fake.worker", retryIntervalMs: 60_000 });
    try {
      let p = await pending(c, "unavail", () => c.preStep({ session: "unavail", step: "1", tools: [] }, { timeoutMs: 30_000 }));
      send(p.inbox, { v: 1, session: "unavail", step: "1", triggerSeq: p.trigger.seq, outcome: "incomplete", error: { code: "unavailable", message: "gave up" } });
      await assert.rejects(p.result, (err: unknown) => err instanceof UnavailableError && err.decision?.outcome === "incomplete");

      p = await pending(c, "large", () => c.preStep({ session: "large", step: "1", tools: [] }, { timeoutMs: 30_000 }));
      send(p.inbox, { v: 1, session: "large", step: "1", triggerSeq: p.trigger.seq, outcome: "appended", error: { code: "too_large", message: "big" } });
      await assert.rejects(p.result, TooLargeError);

      const q = await pending(c, "unavail2", () => c.callSkill({ session: "unavail2", call: "c", args: { name: "x" } }, { timeoutMs: 30_000 }));
      send(q.inbox, { v: 1, session: "unavail2", call: "c", triggerSeq: q.trigger.seq, isError: true, text: "Error: x", error: { code: "unavailable", message: "x" } });
      await assert.rejects(q.result, UnavailableError);

      // A model-facing error is a result, not an exception.
      const m = await pending(c, "unknown", () => c.callSkill({ session: "unknown", call: "c", args: { name: "x" } }, { timeoutMs: 30_000 }));
      send(m.inbox, { v: 1, session: "unknown", call: "c", triggerSeq: m.trigger.seq, isError: true, text: "Error: unknown skill", error: { code: "unknown", message: "unknown skill" } });
      const r = await m.result;
      assert.equal(r.isError, true);
      assert.equal(r.text, "Error: unknown skill");
    } finally {
      await c.close();
    }
  });

  test("a store skill's directory comes from the client's resourceDir, never from the answer", async () => {
    const dir = tempDir("hostile");
    const c = await connect({ servers: serve.url, inboxPrefix: "fake.worker", retryIntervalMs: 60_000 });
    try {
      const digest = "ab".repeat(32);
      const resourceDir = join(dir, "res");
      const elsewhere = join(dir, "elsewhere");
      const forge = async (sid: string, name: string, path: string) => {
        const p = await pending(c, sid, () =>
          c.callSkill({ session: sid, call: "c", args: { name }, resourceDir }, { timeoutMs: 30_000 }),
        );
        send(p.inbox, {
          v: 1, session: sid, call: "c", triggerSeq: p.trigger.seq, isError: false, text: "x",
          value: { name, provider: "store", digest, resourceBase: { kind: "directory", path } },
        });
        return p.result;
      };
      await assert.rejects(forge("path", "a-skill", elsewhere), (err: unknown) => err instanceof MaterializeError && err.result.value?.name === "a-skill");
      await assert.rejects(forge("name", "../../escape", join(resourceDir, "../../escape", digest.slice(0, 16))), MaterializeError);
      assert.equal(existsSync(elsewhere), false);
      assert.deepEqual(existsSync(resourceDir) ? readdirSync(resourceDir) : [], []);
      assert.equal(existsSync(join(dir, "escape")), false);
    } finally {
      await c.close();
      removeTree(dir);
    }
  });
});
