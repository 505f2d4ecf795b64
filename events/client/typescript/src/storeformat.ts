// The skill store's format, as the Go package events/skillstore defines
// it; test/storeformat.test.ts checks this module against the fixture that
// package writes (events/skillstore/testdata/format.json), so the two
// cannot drift apart. Pure: no I/O, no NATS.
//
// The store is two buckets, both named SKILLS by default: a key-value
// index with one key per scope and skill ("global.<name>",
// "project.<id>.<name>") and an object store holding each skill's files
// as one object named by the skill's digest. The digest is the lowercase
// hex SHA-256 over the files in byte order of their "/"-separated paths,
// each contributing "<path>\0<size in decimal>\0<bytes>". An object is a
// tar archive of regular files only, in that order; nothing in it is
// trusted: entry kinds, paths, sizes and count are checked, and the files
// must hash to the digest asked for.
import { createHash } from "node:crypto";
import { posix } from "node:path";

/** Default names of the index bucket and the object store. */
export const DEFAULT_BUCKET = "SKILLS";
export const DEFAULT_OBJECTS = "SKILLS";

/** Bounds on a skill's files (the skill store's defaults). */
export const MAX_SKILL_FILES = 1000;
export const MAX_SKILL_BYTES = 8 << 20;
/** The largest object those files make: the files, a 512-byte header and up to 511 bytes of padding each, the end marker. */
export const MAX_OBJECT_BYTES = MAX_SKILL_BYTES + MAX_SKILL_FILES * 1024 + 2048;
/** Bounds on a skill name in the store and on a file's path in a skill, in bytes. */
export const MAX_NAME_LENGTH = 64;
export const MAX_PATH_LENGTH = 1024;

const HEX_DIGEST = /^[0-9a-f]{64}$/;
const STORE_NAME = /^[a-z0-9-]+$/;
const PROJECT_ID = /^[A-Za-z0-9_-]{1,128}$/;

/**
 * Whether name can name a skill in the store: 1 to 64 lowercase letters,
 * digits or '-'. Such a name is one index key token and one path element.
 * (The catalog's rule for skill names is stricter; every name it accepts
 * is one the store accepts.)
 */
export function validStoreName(name: string): boolean {
  return name.length <= MAX_NAME_LENGTH && STORE_NAME.test(name);
}

/** Whether digest is 64 lowercase hex digits. */
export function validDigest(digest: string): boolean {
  return HEX_DIGEST.test(digest);
}

/** The first 12 hex digits of a digest, as messages print it. */
export function shortDigest(digest: string): string {
  return digest.slice(0, 12);
}

/** The name of the object holding the files of digest: the digest. */
export function objectName(digest: string): string {
  return digest;
}

function scopePrefix(scope: string): string {
  if (scope === "global") return "global.";
  const id = scope.startsWith("project/") ? scope.slice("project/".length) : undefined;
  if (id === undefined || !PROJECT_ID.test(id)) {
    throw new Error(`scope ${JSON.stringify(scope.slice(0, 80))}: want global or project/<id>`);
  }
  return `project.${id}.`;
}

/** The index key of skill name in scope ("global" or "project/<id>"). */
export function indexKey(scope: string, name: string): string {
  if (!validStoreName(name)) throw new Error(`skill name ${JSON.stringify(name.slice(0, 80))} is not one the store accepts`);
  return scopePrefix(scope) + name;
}

/** The key filter matching every skill of scope. */
export function scopeFilter(scope: string): string {
  return `${scopePrefix(scope)}*`;
}

/**
 * Where a store skill's files go under a resource directory:
 * `<resourceDir>/<name>/<first 16 hex of digest>`. The name must be one
 * the store accepts and the digest 64 lowercase hex digits; anything else
 * throws.
 */
export function resourcePath(resourceDir: string, name: string, digest: string): string {
  if (!validStoreName(name)) throw new Error(`skill name ${JSON.stringify(name.slice(0, 80))} is not a valid skill name`);
  if (!validDigest(digest)) throw new Error(`digest ${JSON.stringify(digest.slice(0, 80))} is not 64 lowercase hex digits`);
  return posix.join(resourceDir, name, digest.slice(0, 16));
}

/** One file of a skill, by its "/"-separated path inside the skill's folder. */
export interface SkillFile {
  path: string;
  data: Uint8Array;
}

/** digestFiles hashes files given in strictly increasing byte order of path. */
export function digestFiles(files: SkillFile[]): string {
  const h = createHash("sha256");
  let last: Buffer | undefined;
  for (const f of files) {
    const p = Buffer.from(f.path, "utf8");
    if (last && Buffer.compare(p, last) <= 0) throw new Error(`archive entry ${JSON.stringify(f.path.slice(0, 80))} out of path order`);
    last = p;
    h.update(p);
    h.update(Buffer.of(0));
    h.update(String(f.data.length));
    h.update(Buffer.of(0));
    h.update(f.data);
  }
  return h.digest("hex");
}

/** Version control folders' names: never published, never materialised (git runs what a .git/config names). */
const VCS_NAMES = new Set([".git", ".hg", ".svn"]);

/** Whether name is a version control folder's name, in any case. */
export function isVCS(name: string): boolean {
  return VCS_NAMES.has(name.toLowerCase());
}

/**
 * checkEntryPath refuses paths that could land outside the skill folder,
 * names with control characters, and entries in version control folders.
 */
export function checkEntryPath(p: string): void {
  const bad =
    p === "" ||
    Buffer.byteLength(p) > MAX_PATH_LENGTH ||
    p.includes("\\") ||
    p.startsWith("/") ||
    posix.normalize(p) !== p ||
    p.split("/").some((el) => el === "" || el === "." || el === "..");
  if (bad) throw new Error(`archive entry path ${JSON.stringify(p.slice(0, 80))} is not a clean relative path`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/u.test(p)) {
    throw new Error(`archive entry path ${JSON.stringify(p.slice(0, 80))} has a control character`);
  }
  if (p.split("/").some(isVCS)) {
    throw new Error(`archive entry path ${JSON.stringify(p.slice(0, 80))} is in a version control folder`);
  }
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
