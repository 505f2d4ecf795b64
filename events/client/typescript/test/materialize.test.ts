// The archive reader and the atomic writer, on hostile archives (no
// server needed: the bytes are built here).
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";

import { writeSkill, holds } from "../src/materialize.js";
import { resourcePath, unpack, validStoreName } from "../src/storeformat.js";
import { removeTree, tempDir } from "./helpers.js";

interface Entry {
  name: string;
  data?: string;
  type?: string;
}

/** A ustar archive of entries, as the skill store writes them. */
function tar(entries: Entry[]): Uint8Array {
  const blocks: Buffer[] = [];
  for (const e of entries) {
    const data = Buffer.from(e.data ?? "");
    const h = Buffer.alloc(512);
    h.write(e.name, 0, 100);
    h.write("0000644\0", 100);
    h.write("0000000\0", 108);
    h.write("0000000\0", 116);
    h.write(data.length.toString(8).padStart(11, "0") + "\0", 124);
    h.write("00000000000\0", 136);
    h.write("        ", 148);
    h.write(e.type ?? "0", 156);
    h.write("ustar\0" + "00", 257);
    let sum = 0;
    for (const b of h) sum += b;
    h.write(sum.toString(8).padStart(6, "0") + "\0 ", 148);
    blocks.push(h, data, Buffer.alloc((512 - (data.length % 512)) % 512));
  }
  blocks.push(Buffer.alloc(1024));
  return Buffer.concat(blocks);
}

function digest(files: { path: string; data: string }[]): string {
  const h = createHash("sha256");
  for (const f of files) h.update(`${f.path}\0${Buffer.byteLength(f.data)}\0${f.data}`);
  return h.digest("hex");
}

const files = [
  { path: "SKILL.md", data: "---\nname: x\n---\nbody\n" },
  { path: "ref/a.md", data: "a" },
];
const good = digest(files);

test("an archive of the digest's files unpacks", () => {
  const got = unpack(tar(files.map((f) => ({ name: f.path, data: f.data }))), good);
  assert.deepEqual(
    got.map((f) => [f.path, Buffer.from(f.data).toString()]),
    files.map((f) => [f.path, f.data]),
  );
});

test("hostile archives are refused", () => {
  const cases: [string, Uint8Array, string, RegExp][] = [
    ["other content", tar([{ name: "SKILL.md", data: "---\nname: x\n---\nBODY\n" }, { name: "ref/a.md", data: "a" }]), good, /hash/],
    ["parent path", tar([{ name: "../x", data: "a" }]), good, /clean relative path/],
    ["absolute path", tar([{ name: "/etc/x", data: "a" }]), good, /clean relative path/],
    ["dot path", tar([{ name: "a/./b", data: "a" }]), good, /clean relative path/],
    ["symbolic link", tar([{ name: "link", type: "2" }]), good, /not a regular file/],
    ["directory entry", tar([{ name: "dir/", type: "5" }]), good, /not a regular file/],
    ["out of order", tar([{ name: "ref/a.md", data: "a" }, { name: "SKILL.md", data: "b" }]), good, /order/],
    ["empty", Buffer.alloc(1024), good, /no files/],
    ["truncated", tar([{ name: "SKILL.md", data: "x".repeat(600) }]).subarray(0, 700), good, /truncated/],
    ["garbage", Buffer.from("x".repeat(2048)), good, /checksum|bad/],
    ["too short", Buffer.from("x"), good, /truncated/],
    ...([".git/config", "sub/.git/hooks/post-checkout", ".GIT/config", ".hg/hgrc", "x/.svn/entries"].map((p) => {
      const fs = [{ path: p, data: "[core]\n\tfsmonitor = touch pwned\n" }, { path: "SKILL.md", data: "b" }];
      return [`vcs ${p}`, tar(fs.map((f) => ({ name: f.path, data: f.data }))), digest(fs), /version control folder/] as [string, Uint8Array, string, RegExp];
    })),
    ...(["notes\nREADME.md", "\u001b[31mred.md", "a\u007fb", "a\u0085b"].map((p) => {
      const fs = [{ path: "SKILL.md", data: "b" }, { path: p, data: "x" }].sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
      return [`control ${JSON.stringify(p)}`, tar(fs.map((f) => ({ name: f.path, data: f.data }))), digest(fs), /control character/] as [string, Uint8Array, string, RegExp];
    })),
  ];
  for (const [name, bytes, d, want] of cases) {
    assert.throws(() => unpack(bytes, d), want, name);
  }
});

test("resourcePath takes only names the store accepts and valid digests", () => {
  assert.equal(resourcePath("/r", "pdf-tools", good), `/r/pdf-tools/${good.slice(0, 16)}`);
  for (const name of ["../x", "..", ".", "A", "a/b", "a.b", "", "x".repeat(65)]) {
    assert.equal(validStoreName(name), false, name);
    assert.throws(() => resourcePath("/r", name, good));
  }
  assert.throws(() => resourcePath("/r", "ok", "ABC"));
});

test("a write failing half way leaves nothing behind", async () => {
  const dir = tempDir("write");
  try {
    const dest = join(dir, "skill", "0123456789abcdef");
    // "a" as a file, then "a/b" below it: the second write fails.
    await assert.rejects(writeSkill([{ path: "a", data: Buffer.from("1") }, { path: "a/b", data: Buffer.from("2") }], good, dest));
    assert.deepEqual(readdirSync(join(dir, "skill")), []);
    // Files not matching the digest are not renamed into place either.
    await assert.rejects(writeSkill([{ path: "SKILL.md", data: Buffer.from("x") }], good, dest), /digest/);
    assert.deepEqual(readdirSync(join(dir, "skill")), []);
    // The right files are.
    await writeSkill(files.map((f) => ({ path: f.path, data: Buffer.from(f.data) })), good, dest);
    assert.equal(await holds(dest, good), true);
    assert.equal(existsSync(join(dest, "ref", "a.md")), true);
  } finally {
    removeTree(dir);
  }
});

test("fuzz: mutated archives are refused with an error or unpack to exactly the digest's files", () => {
  const base = tar(files.map((f) => ({ name: f.path, data: f.data })));
  let seed = 0x2545f491;
  const rand = (n: number) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  let accepted = 0;
  for (let i = 0; i < 3000; i++) {
    const b = Buffer.from(base);
    for (let k = 1 + rand(4); k > 0; k--) b[rand(b.length)] = rand(256);
    const cut = rand(4) === 0 ? b.subarray(0, rand(b.length)) : b;
    try {
      const got = unpack(cut, good);
      assert.deepEqual(
        got.map((f) => [f.path, Buffer.from(f.data).toString()]),
        files.map((f) => [f.path, f.data]),
      );
      accepted++;
    } catch (err) {
      assert.ok(err instanceof Error && err.message.length > 0, String(err));
    }
  }
  assert.ok(accepted > 0, "some mutations only touch padding and still unpack");
});
