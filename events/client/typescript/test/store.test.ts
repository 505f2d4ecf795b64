// Store skills: published with `skillstream skills push`, materialised by
// the client from the object store, verified against the digest.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Objm } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";

import { connect, isStoreSkill, MaterializeError, resourcePath, type ToolResult } from "../src/index.js";
import { removeTree, Serve, tempDir, writeSkill } from "./helpers.js";

let serve: Serve;
let nc: NatsConnection;
let work: string;
before(async () => {
  serve = await Serve.start();
  nc = await serve.conn();
  work = tempDir("store");
  const src = join(work, "src");
  writeSkill(src, "store-skill", "A skill from the store.", "Read reference/guide.md.\n");
  mkdirSync(join(src, "store-skill", "reference"), { recursive: true });
  writeFileSync(join(src, "store-skill", "reference", "guide.md"), "# Guide\n\nStep one.\n");
  const out = await serve.cli("skills", "push", src);
  assert.match(out, /store-skill/);
});
after(async () => {
  await nc?.close();
  await serve?.stop();
  if (work) removeTree(work);
});

/** Every entry below dir, relative, with its mode. */
function tree(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const e of readdirSync(d).sort()) {
      const p = join(d, e);
      const st = statSync(p);
      out.push(`${rel}${e}${st.isDirectory() ? "/" : ""} ${(st.mode & 0o777).toString(8)}`);
      if (st.isDirectory()) walk(p, `${rel}${e}/`);
    }
  };
  if (existsSync(dir)) walk(dir, "");
  return out;
}

async function call(resourceDir: string, sid: string, materialize?: (r: ToolResult, dir: string) => Promise<void>): Promise<ToolResult> {
  const c = await connect({ servers: serve.url, ...(materialize ? { materialize } : {}) });
  try {
    return await c.callSkill({ session: sid, call: "c1", args: { name: "store-skill" }, resourceDir }, { timeoutMs: 30_000 });
  } finally {
    await c.close();
  }
}

test("a store skill is materialised at <resourceDir>/<name>/<digest16>, read-only, verified, once per digest", async () => {
  const resourceDir = join(work, "res");
  const r = await call(resourceDir, "store1");
  assert.equal(r.isError, false, r.text);
  assert.ok(isStoreSkill(r));
  assert.match(r.value!.digest!, /^[0-9a-f]{64}$/);
  const dir = resourcePath(resourceDir, "store-skill", r.value!.digest!);
  assert.equal(r.value!.resourceBase!.path, dir);
  assert.equal(readFileSync(join(dir, "reference", "guide.md"), "utf8"), "# Guide\n\nStep one.\n");
  assert.match(readFileSync(join(dir, "SKILL.md"), "utf8"), /name: store-skill/);
  assert.deepEqual(tree(join(resourceDir, "store-skill")), [
    `${r.value!.digest!.slice(0, 16)}/ 555`,
    `${r.value!.digest!.slice(0, 16)}/SKILL.md 444`,
    `${r.value!.digest!.slice(0, 16)}/reference/ 555`,
    `${r.value!.digest!.slice(0, 16)}/reference/guide.md 444`,
  ]);
  // Once per digest: the same directory again is left as it is, even when
  // the object store could no longer serve it.
  const before = statSync(dir).ino;
  const again = await call(resourceDir, "store2");
  assert.equal(again.value!.digest, r.value!.digest);
  assert.equal(statSync(dir).ino, before);

  // The materialize hook replaces the default, with the directory the client computed.
  const seen: string[] = [];
  await call(join(work, "hooked"), "store3", async (res, d) => {
    seen.push(`${res.value!.name} ${d}`);
  });
  assert.deepEqual(seen, [`store-skill ${resourcePath(join(work, "hooked"), "store-skill", r.value!.digest!)}`]);
  // A failing hook is a MaterializeError with the result.
  await assert.rejects(
    call(join(work, "failing"), "store4", async () => {
      throw new Error("disk full");
    }),
    (err: unknown) => err instanceof MaterializeError && /disk full/.test(err.message) && err.result.value?.name === "store-skill",
  );

  // A tampered object: other files under the digest's name. Refused, nothing written.
  const os = await new Objm(nc).open("SKILLS");
  const good = await os.getBlob(r.value!.digest!);
  assert.ok(good && good.length > 0);
  const tampered = Buffer.from(good);
  const at = tampered.indexOf("Step one.");
  assert.ok(at > 0);
  tampered.write("Step 0ne.", at); // same size, other bytes: only the digest can tell
  await os.put({ name: r.value!.digest! }, new Response(tampered).body!);
  const fresh = join(work, "fresh");
  await assert.rejects(call(fresh, "store5"), (err: unknown) => err instanceof MaterializeError && /hash/.test(err.message));
  assert.deepEqual(tree(fresh), [], "nothing half written, no temporary folder left");
  // Garbage in the object: refused the same way.
  await os.put({ name: r.value!.digest! }, new Response(Buffer.from("not a tar archive at all")).body!);
  await assert.rejects(call(fresh, "store6"), MaterializeError);
  assert.deepEqual(tree(fresh), []);
  // The object restored: materialised.
  await os.put({ name: r.value!.digest! }, new Response(good).body!);
  await call(fresh, "store7");
  assert.equal(tree(fresh).length, 5);
});

test("a directory holding other files under the digest's name is refused", async () => {
  const resourceDir = join(work, "occupied");
  const r0 = await call(join(work, "probe"), "occ0", async () => {});
  const dir = resourcePath(resourceDir, "store-skill", r0.value!.digest!);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "SKILL.md"), "something else");
  await assert.rejects(call(resourceDir, "occ1"), (err: unknown) => err instanceof MaterializeError && /other files/.test(err.message));
  assert.equal(readFileSync(join(dir, "SKILL.md"), "utf8"), "something else");
});
