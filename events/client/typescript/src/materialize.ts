// Store skills' files on the worker's host. A skill of the skill store
// travels as one object of its object store, named by the skill's digest:
// a tar archive of regular files in byte order of path. The digest is the
// lowercase hex SHA-256 over the files, each contributing
// "<path>\0<size in decimal>\0<bytes>". Nothing in the archive is trusted:
// entry kinds, paths, sizes and count are checked, and the files must hash
// to the digest the client asked for before anything is written.
import { createHash } from "node:crypto";
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join, posix } from "node:path";
import type { ObjectStore } from "@nats-io/obj";

/** Bounds on a skill's files (the skill store's defaults). */
export const MAX_SKILL_FILES = 1000;
export const MAX_SKILL_BYTES = 8 << 20;

const HEX_DIGEST = /^[0-9a-f]{64}$/;
const SKILL_NAME = /^[a-z0-9]+(-[a-z0-9]+)*$/;

/** Whether name is a valid skill name (and so a safe path element). */
export function validSkillName(name: string): boolean {
  return name.length <= 64 && SKILL_NAME.test(name);
}

/** Whether digest is 64 lowercase hex digits. */
export function validDigest(digest: string): boolean {
  return HEX_DIGEST.test(digest);
}

/**
 * Where a store skill's files go under a resource directory:
 * `<resourceDir>/<name>/<first 16 hex of digest>`. The name must be a
 * valid skill name and the digest 64 lowercase hex digits; anything else
 * throws.
 */
export function resourcePath(resourceDir: string, name: string, digest: string): string {
  if (!validSkillName(name)) throw new Error(`skill name ${JSON.stringify(name.slice(0, 80))} is not a valid skill name`);
  if (!validDigest(digest)) throw new Error(`digest ${JSON.stringify(digest.slice(0, 80))} is not 64 lowercase hex digits`);
  return posix.join(resourceDir, name, digest.slice(0, 16));
}

interface SkillFile {
  path: string;
  data: Uint8Array;
}

/** digestFiles hashes files given in strictly increasing byte order of path. */
function digestFiles(files: SkillFile[]): string {
  const h = createHash("sha256");
  let last: Buffer | undefined;
  for (const f of files) {
    const p = Buffer.from(f.path, "utf8");
    if (last && Buffer.compare(p, last) <= 0) throw new Error(`archive entry ${JSON.stringify(f.path)} out of path order`);
    last = p;
    h.update(p);
    h.update(Buffer.of(0));
    h.update(String(f.data.length));
    h.update(Buffer.of(0));
    h.update(f.data);
  }
  return h.digest("hex");
}

/** checkEntryPath refuses paths that could land outside the skill folder. */
function checkEntryPath(p: string): void {
  const bad =
    p === "" ||
    Buffer.byteLength(p) > 1024 ||
    p.includes("\\") ||
    p.includes("\0") ||
    p.startsWith("/") ||
    posix.normalize(p) !== p ||
    p.split("/").some((el) => el === "" || el === "." || el === "..");
  if (bad) throw new Error(`archive entry path ${JSON.stringify(p.slice(0, 80))} is not a clean relative path`);
}

function cstr(b: Uint8Array, off: number, len: number): string {
  const s = b.subarray(off, off + len);
  const end = s.indexOf(0);
  return Buffer.from(end < 0 ? s : s.subarray(0, end)).toString("utf8");
}

function octal(b: Uint8Array, off: number, len: number, what: string): number {
  const s = cstr(b, off, len).trim();
  if (!/^[0-7]+$/.test(s)) throw new Error(`archive header: bad ${what} ${JSON.stringify(s)}`);
  const n = parseInt(s, 8);
  if (!Number.isSafeInteger(n)) throw new Error(`archive header: ${what} out of range`);
  return n;
}

function paxRecords(data: Uint8Array): Map<string, string> {
  const out = new Map<string, string>();
  const text = Buffer.from(data).toString("utf8");
  let i = 0;
  while (i < text.length) {
    const sp = text.indexOf(" ", i);
    if (sp < 0) throw new Error("archive: malformed extended header");
    const n = Number(text.slice(i, sp));
    const rec = text.slice(sp + 1, i + n);
    if (!Number.isInteger(n) || n <= 0 || !rec.endsWith("\n") || !rec.includes("=")) {
      throw new Error("archive: malformed extended header record");
    }
    const eq = rec.indexOf("=");
    out.set(rec.slice(0, eq), rec.slice(eq + 1, -1));
    i += n;
  }
  return out;
}

/**
 * unpack reads an archive of regular files and checks it against digest
 * and the limits. It throws on anything else.
 */
export function unpack(archive: Uint8Array, digest: string): SkillFile[] {
  const files: SkillFile[] = [];
  let total = 0;
  let off = 0;
  let pax: Map<string, string> | undefined;
  for (;;) {
    if (off + 512 > archive.length) throw new Error("archive is truncated");
    const hdr = archive.subarray(off, off + 512);
    if (hdr.every((x) => x === 0)) break;
    let sum = 0;
    for (let i = 0; i < 512; i++) sum += i >= 148 && i < 156 ? 32 : hdr[i]!;
    if (sum !== octal(hdr, 148, 8, "checksum")) throw new Error("archive header checksum mismatch");
    const type = String.fromCharCode(hdr[156]!);
    let size = octal(hdr, 124, 12, "size");
    let name = cstr(hdr, 0, 100);
    const magic = cstr(hdr, 257, 6);
    if (magic === "ustar") {
      const prefix = cstr(hdr, 345, 155);
      if (prefix) name = `${prefix}/${name}`;
    }
    if (pax) {
      const p = pax.get("path");
      if (p !== undefined) name = p;
      const s = pax.get("size");
      if (s !== undefined) {
        if (!/^[0-9]+$/.test(s)) throw new Error("archive: bad size in extended header");
        size = Number(s);
      }
    }
    off += 512;
    if (size > MAX_SKILL_BYTES - total || off + size > archive.length) {
      throw new Error(size > MAX_SKILL_BYTES - total ? `files total more than ${MAX_SKILL_BYTES} bytes` : "archive is truncated");
    }
    const data = archive.subarray(off, off + size);
    off += Math.ceil(size / 512) * 512;
    if (type === "x") {
      if (pax) throw new Error("archive: two extended headers in a row");
      pax = paxRecords(data);
      continue;
    }
    pax = undefined;
    if (type !== "0" && type !== "\0") throw new Error(`archive entry ${JSON.stringify(name.slice(0, 80))} is not a regular file`);
    checkEntryPath(name);
    if (files.length >= MAX_SKILL_FILES) throw new Error(`more than ${MAX_SKILL_FILES} files`);
    total += size;
    files.push({ path: name, data });
  }
  if (files.length === 0) throw new Error("archive holds no files");
  const got = digestFiles(files);
  if (got !== digest) throw new Error(`files hash to ${got.slice(0, 12)}, not ${digest.slice(0, 12)}`);
  return files;
}

/** digestDir digests the folder dir; undefined when it holds anything but regular files and folders. */
async function digestDir(dir: string): Promise<string | undefined> {
  const files: { path: string; abs: string }[] = [];
  const walk = async (abs: string, rel: string): Promise<boolean> => {
    for (const e of await readdir(abs, { withFileTypes: true })) {
      const a = join(abs, e.name);
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) {
        if (!(await walk(a, r))) return false;
      } else if (e.isFile()) {
        files.push({ path: r, abs: a });
      } else {
        return false;
      }
    }
    return true;
  };
  if (!(await walk(dir, ""))) return undefined;
  files.sort((a, b) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path)));
  const read: SkillFile[] = [];
  for (const f of files) read.push({ path: f.path, data: await readFile(f.abs) });
  return digestFiles(read);
}

/**
 * holds reports whether dir exists holding exactly the files of digest;
 * an existing dir with anything else throws.
 */
export async function holds(dir: string, digest: string): Promise<boolean> {
  let st;
  try {
    st = await lstat(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
  if (!st.isDirectory() || (await digestDir(dir)) !== digest) {
    throw new Error(`${dir} exists with other files`);
  }
  return true;
}

async function removeTree(root: string): Promise<void> {
  const unlock = async (p: string): Promise<void> => {
    try {
      await chmod(p, 0o755);
      for (const e of await readdir(p, { withFileTypes: true })) {
        if (e.isDirectory()) await unlock(join(p, e.name));
      }
    } catch {
      // best effort: rm below reports nothing either
    }
  };
  await unlock(root);
  await rm(root, { recursive: true, force: true });
}

/**
 * writeSkill writes files into dir atomically: into a temporary folder
 * beside it, checked against the digest again, made read-only and renamed
 * into place. dir ends up absent or complete, never half written.
 */
export async function writeSkill(files: SkillFile[], digest: string, dir: string): Promise<void> {
  const parent = dirname(dir);
  await mkdir(parent, { recursive: true });
  const tmp = await mkdtemp(join(parent, `.${basename(dir)}.tmp-`));
  try {
    const dirs = [tmp];
    for (const f of files) {
      checkEntryPath(f.path);
      const p = join(tmp, ...f.path.split("/"));
      const d = dirname(p);
      if (!dirs.includes(d)) {
        await mkdir(d, { recursive: true });
        for (let x = d; x !== tmp && !dirs.includes(x); x = dirname(x)) dirs.push(x);
      }
      await writeFile(p, f.data, { mode: 0o444, flag: "wx" });
    }
    if ((await digestDir(tmp)) !== digest) throw new Error("written files do not match the digest");
    dirs.sort((a, b) => b.length - a.length);
    for (const d of dirs) await chmod(d, 0o555);
    try {
      await rename(tmp, dir);
    } catch (err) {
      if (await holds(dir, digest).catch(() => false)) {
        await removeTree(tmp);
        return; // materialised by someone else meanwhile
      }
      throw err;
    }
  } catch (err) {
    await removeTree(tmp);
    throw err;
  }
}

/** The largest object a skill's files may take: the files and the archive's headers and padding. */
const MAX_OBJECT_BYTES = MAX_SKILL_BYTES + MAX_SKILL_FILES * 1024 + 2048;

/** fetchObject reads the object named digest, at most MAX_OBJECT_BYTES. */
export async function fetchObject(os: ObjectStore, digest: string): Promise<Uint8Array> {
  const r = await os.get(digest);
  if (!r) throw new Error(`object ${digest.slice(0, 12)} is not in the skill object store`);
  if (r.info.size > MAX_OBJECT_BYTES) {
    throw new Error(`object ${digest.slice(0, 12)} is ${r.info.size} bytes, over the limit of ${MAX_OBJECT_BYTES}`);
  }
  const chunks: Uint8Array[] = [];
  let n = 0;
  const reader = r.data.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    n += value.length;
    if (n > MAX_OBJECT_BYTES) {
      await reader.cancel();
      throw new Error(`object ${digest.slice(0, 12)} is over the limit of ${MAX_OBJECT_BYTES} bytes`);
    }
    chunks.push(value);
  }
  const err = await r.error;
  if (err) throw err;
  return Buffer.concat(chunks);
}

/**
 * materializeFromStore puts the files of the skill with digest into dir:
 * nothing when dir already holds exactly them, else fetched from the
 * object store, verified and written atomically and read-only.
 */
export async function materializeFromStore(os: () => Promise<ObjectStore>, digest: string, dir: string): Promise<void> {
  if (!validDigest(digest)) throw new Error(`digest ${JSON.stringify(digest.slice(0, 80))} is not 64 lowercase hex digits`);
  if (await holds(dir, digest)) return;
  const files = unpack(await fetchObject(await os(), digest), digest);
  await writeSkill(files, digest, dir);
}
