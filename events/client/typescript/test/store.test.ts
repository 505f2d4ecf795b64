// Store skills: published with `skillstream skills push`, materialised by
// the client from the object store (direct gets only), verified against
// the digest; and the direct reader on objects of many chunks, missing,
// linked, deleted and tampered ones.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createHash } from "node:crypto";
import { jetstream, jetstreamManager, type DirectStreamAPI, type JetStreamManager } from "@nats-io/jetstream";
import { Objm, type ObjectStore } from "@nats-io/obj";
import type { NatsConnection } from "@nats-io/transport-node";

import { connect, isStoreSkill, MaterializeError, resourcePath, type ToolResult } from "../src/index.js";
import { removeTree, Serve, tempDir, writeSkill } from "./helpers.js";
import { chunkSubject, fetchObject, metaSubject } from "../src/materialize.js";
import { MAX_OBJECT_BYTES } from "../src/storeformat.js";

let serve: Serve;
let nc: NatsConnection;
let jsm: JetStreamManager;
let direct: DirectStreamAPI;
let work: string;
before(async () => {
  serve = await Serve.start();
  nc = await serve.conn();
  jsm = await jetstreamManager(nc);
  direct = (await jetstreamManager(nc, { checkAPI: false })).direct;
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

test("an object linked to itself is refused at once, not followed (the object store's get would never return)", async () => {
  const os = await new Objm(nc).open("SKILLS");
  const name = "f".repeat(64);
  await os.link(name, { name, bucket: "SKILLS", deleted: false, isLink: () => false } as unknown as Parameters<typeof os.link>[1]);
  await assert.rejects(fetchObject(direct, "SKILLS", name), /is a link/);
});

/** count bytes, the same on every call with the same seed, none of them a pattern. */
function bytes(count: number, seed: string): Buffer {
  const out: Buffer[] = [];
  for (let i = 0; out.length * 32 < count; i++) out.push(createHash("sha256").update(`${seed}/${i}`).digest());
  return Buffer.concat(out).subarray(0, count);
}

/** The stream sequences of the chunks of the object named name, in order. */
async function chunkSeqs(os: ObjectStore, name: string): Promise<number[]> {
  const info = await os.info(name);
  assert.ok(info);
  const seqs: number[] = [];
  for (let seq = 1; ; ) {
    const m = await direct.getMessage("OBJ_SKILLS", { seq, next_by_subj: chunkSubject("SKILLS", info.nuid) });
    if (!m) return seqs;
    seqs.push(m.seq);
    seq = m.seq + 1;
  }
}

test("the direct reader reads an object of many chunks, byte for byte, and the client materialises one", async () => {
  const os = await new Objm(nc).open("SKILLS");
  for (const [size, chunk] of [[1000, 100], [1001, 100], [1, 64], [64, 64], [300_000, 4096]] as const) {
    const name = createHash("sha256").update(`many ${size} ${chunk}`).digest("hex");
    const data = bytes(size, name);
    const info = await os.putBlob({ name, options: { max_chunk_size: chunk } }, data);
    assert.equal(info.chunks, Math.ceil(size / chunk));
    assert.deepEqual(Buffer.from(await fetchObject(direct, "SKILLS", name)), data, `${size} bytes in chunks of ${chunk}`);
  }
  // The metadata subject is the object store's own (base64url with padding).
  const name = "0".repeat(64);
  await os.putBlob({ name }, Buffer.from("x"));
  assert.ok(await direct.getMessage("OBJ_SKILLS", { last_by_subj: metaSubject("SKILLS", name) }));
  assert.match(metaSubject("SKILLS", name), /^\$O\.SKILLS\.M\.[A-Za-z0-9_-]+={1,2}$/);

  // The skill's own object in chunks of 100 bytes: materialised as well.
  const r0 = await call(join(work, "probe-many"), "many0", async () => {});
  const digest = r0.value!.digest!;
  const archive = await os.getBlob(digest);
  assert.ok(archive && archive.length > 1000);
  const info = await os.putBlob({ name: digest, options: { max_chunk_size: 100 } }, archive);
  assert.ok(info.chunks > 10, `${info.chunks} chunks`);
  const resourceDir = join(work, "many");
  await call(resourceDir, "many1");
  assert.equal(readFileSync(join(resourcePath(resourceDir, "store-skill", digest), "reference", "guide.md"), "utf8"), "# Guide\n\nStep one.\n");
});

test("the direct reader refuses missing, deleted, linked and over-size objects", async () => {
  const os = await new Objm(nc).open("SKILLS");
  await assert.rejects(fetchObject(direct, "SKILLS", "b".repeat(64)), /not in the skill object store/);
  // A bucket that does not exist: no stream answers.
  await assert.rejects(fetchObject(direct, "NOSUCHBUCKET", "b".repeat(64)));

  const gone = "c".repeat(64);
  await os.putBlob({ name: gone }, Buffer.from("soon gone"));
  await os.delete(gone);
  await assert.rejects(fetchObject(direct, "SKILLS", gone), /not in the skill object store/);

  // A link to another object, which exists: refused, not followed.
  const target = "d".repeat(64);
  const tinfo = await os.putBlob({ name: target }, Buffer.from("target"));
  const linked = "e".repeat(64);
  await os.link(linked, tinfo);
  await assert.rejects(fetchObject(direct, "SKILLS", linked), /is a link/);
  assert.deepEqual(Buffer.from(await fetchObject(direct, "SKILLS", target)), Buffer.from("target"));

  // Over the bound: refused by its metadata, before a chunk is read.
  const big = "1".repeat(64);
  const js = jetstream(nc);
  await js.publish(metaSubject("SKILLS", big), JSON.stringify({
    name: big, bucket: "SKILLS", nuid: "BIGNUID", size: MAX_OBJECT_BYTES + 1, chunks: 1, digest: "SHA-256=x",
  }));
  await assert.rejects(fetchObject(direct, "SKILLS", big), /over the limit/);
});

test("the direct reader refuses objects whose metadata or chunks were tampered with", async () => {
  const os = await new Objm(nc).open("SKILLS");
  const js = jetstream(nc);
  const name = "2".repeat(64);
  const data = bytes(1000, "tamper");
  const put = async () => {
    await os.putBlob({ name, options: { max_chunk_size: 300 } }, data);
    const info = await direct.getMessage("OBJ_SKILLS", { last_by_subj: metaSubject("SKILLS", name) });
    assert.ok(info);
    return info.json<Record<string, unknown>>();
  };
  const meta = await put();
  assert.equal(meta.chunks, 4);
  assert.deepEqual(Buffer.from(await fetchObject(direct, "SKILLS", name)), data);

  // Metadata published over the object's own, as anyone who may write the stream could.
  const cases: [string, Record<string, unknown> | string, RegExp][] = [
    ["size one less", { ...meta, size: 999 }, /more than its 999 bytes/],
    ["size one more", { ...meta, size: 1001 }, /hold 1000 of its 1001 bytes/],
    ["one chunk fewer", { ...meta, chunks: 3 }, /hold 900 of its 1000 bytes/],
    ["one chunk more", { ...meta, chunks: 5 }, /not in the skill object store \(4 of its 5 chunks\)/],
    ["chunks absurd", { ...meta, chunks: 1e9 }, /1000000000 chunks for 1000 bytes/],
    ["other digest", { ...meta, digest: `SHA-256=${createHash("sha256").update("other").digest("base64url")}=` }, /do not hash/],
    ["unpadded digest", { ...meta, digest: String(meta.digest).replace(/=+$/, "") }, /do not hash/],
    ["other name", { ...meta, name: "3".repeat(64) }, /metadata names/],
    ["chunk id with a wildcard", { ...meta, nuid: "*" }, /chunk id/],
    ["chunk id of two tokens", { ...meta, nuid: "a.b" }, /chunk id/],
    ["size negative", { ...meta, size: -1 }, /size not a count/],
    ["size not a number", { ...meta, size: "1000" }, /size not a count/],
    ["not JSON", "{not json", /metadata/],
    ["not an object", "[1]", /not an object/],
  ];
  for (const [what, m, want] of cases) {
    await js.publish(metaSubject("SKILLS", name), typeof m === "string" ? m : JSON.stringify(m));
    await assert.rejects(fetchObject(direct, "SKILLS", name), want, what);
  }
  // The real metadata again: read.
  await js.publish(metaSubject("SKILLS", name), JSON.stringify(meta));
  assert.deepEqual(Buffer.from(await fetchObject(direct, "SKILLS", name)), data);

  // A chunk replaced: its message deleted and another body published on
  // the chunk subject, where the reader finds it in its place.
  const nuid = String(meta.nuid);
  const swap = async (body: Uint8Array) => {
    const seqs = await chunkSeqs(os, name);
    await jsm.streams.deleteMessage("OBJ_SKILLS", seqs[seqs.length - 1]!);
    await js.publish(chunkSubject("SKILLS", nuid), body);
  };
  const last = data.subarray(900);
  const other = Buffer.from(last);
  other[0] = other[0]! ^ 1;
  await swap(other); // the same size, other bytes: only the digest tells
  await assert.rejects(fetchObject(direct, "SKILLS", name), /do not hash/);
  await swap(Buffer.concat([last, Buffer.from("x")]));
  await assert.rejects(fetchObject(direct, "SKILLS", name), /more than its 1000 bytes/);
  await swap(last.subarray(1));
  await assert.rejects(fetchObject(direct, "SKILLS", name), /hold 999 of its 1000 bytes/);
  await swap(last);
  assert.deepEqual(Buffer.from(await fetchObject(direct, "SKILLS", name)), data);
  // A chunk gone: the object is missing a part.
  const seqs = await chunkSeqs(os, name);
  await jsm.streams.deleteMessage("OBJ_SKILLS", seqs[1]!);
  await assert.rejects(fetchObject(direct, "SKILLS", name), /not in the skill object store \(3 of its 4 chunks\)/);
});
