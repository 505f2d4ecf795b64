// Store skills' files on the worker's host: fetched by digest from the
// skill store's object store with JetStream direct gets only, checked
// (storeformat.ts: the archive, its paths, the digest) and written
// atomically and read-only.
import { createHash } from "node:crypto";
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { DirectStreamAPI } from "@nats-io/jetstream";

import { checkEntryPath, digestFiles, MAX_OBJECT_BYTES, objectName, shortDigest, type SkillFile, unpack, validDigest } from "./storeformat.js";

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

/** How long reading one object may take, all its direct gets together. */
const OBJECT_READ_TIMEOUT_MS = 30_000;

/** Base64 with the URL alphabet and padding, as nats.go's base64.URLEncoding and @nats-io/obj write it. */
function base64URLPadded(b: Uint8Array | string): string {
  return Buffer.from(b).toString("base64").replace(/\+/g, "-").replace(/\//g, "_");
}

/** The subject of an object's metadata in the object store bucket. */
export function metaSubject(bucket: string, name: string): string {
  return `$O.${bucket}.M.${base64URLPadded(name)}`;
}

/** The subject of the chunks of the object with chunk id nuid in bucket. */
export function chunkSubject(bucket: string, nuid: string): string {
  return `$O.${bucket}.C.${nuid}`;
}

/** The fields of an object's metadata (ObjectInfo) the reader uses. */
interface ObjectMeta {
  name: string;
  size: number;
  chunks: number;
  nuid: string;
  digest: string;
  deleted: boolean;
  link: { name?: unknown; bucket?: unknown } | undefined;
}

function clip(s: string): string {
  return JSON.stringify(s.slice(0, 80));
}

/** Whether s is one subject token of safe bytes (a chunk id). */
function subjectToken(s: string): boolean {
  return s.length > 0 && s.length <= 256 && /^[\x21-\x7e]+$/.test(s) && !/[.*>]/.test(s);
}

function count(v: unknown): v is number {
  return typeof v === "number" && Number.isSafeInteger(v) && v >= 0;
}

/** parseMeta reads an object's metadata; malformed metadata throws. */
function parseMeta(data: Uint8Array): ObjectMeta {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(data).toString("utf8"));
  } catch (err) {
    throw new Error(`metadata: ${(err as Error).message}`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new Error("metadata: not an object");
  const o = v as Record<string, unknown>;
  const opts = o.options;
  if (opts !== undefined && opts !== null && (typeof opts !== "object" || Array.isArray(opts))) {
    throw new Error("metadata: options not an object");
  }
  const link = (opts as Record<string, unknown> | null | undefined)?.link;
  if (link !== undefined && link !== null && (typeof link !== "object" || Array.isArray(link))) {
    throw new Error("metadata: link not an object");
  }
  const size = o.size ?? 0;
  const chunks = o.chunks ?? 0;
  if (!count(size)) throw new Error("metadata: size not a count");
  if (!count(chunks)) throw new Error("metadata: chunks not a count");
  for (const k of ["name", "nuid", "digest"] as const) {
    if (o[k] !== undefined && typeof o[k] !== "string") throw new Error(`metadata: ${k} not a string`);
  }
  if (o.deleted !== undefined && typeof o.deleted !== "boolean") throw new Error("metadata: deleted not a boolean");
  return {
    name: (o.name as string | undefined) ?? "",
    size,
    chunks,
    nuid: (o.nuid as string | undefined) ?? "",
    digest: (o.digest as string | undefined) ?? "",
    deleted: o.deleted === true,
    link: (link ?? undefined) as ObjectMeta["link"],
  };
}

/**
 * fetchObject reads the object named for digest from the object store
 * bucket with JetStream direct gets on its stream (OBJ_<bucket>) and
 * nothing else: no stream info, no consumer. The object's metadata is the
 * last message on its metadata subject; its chunks are read one at a time,
 * each the next message on its chunk subject. An object that is not there
 * (or deleted) throws "not in the skill object store"; a link, metadata
 * out of bounds (over MAX_OBJECT_BYTES), chunks that do not add up to its
 * size or do not hash to its SHA-256 digest throw too.
 */
export async function fetchObject(direct: DirectStreamAPI, bucket: string, digest: string): Promise<Uint8Array> {
  const short = shortDigest(digest);
  const name = objectName(digest);
  const stream = `OBJ_${bucket}`;
  const end = Date.now() + OBJECT_READ_TIMEOUT_MS;
  const inTime = (): void => {
    if (Date.now() > end) throw new Error(`object ${short}: not read within ${OBJECT_READ_TIMEOUT_MS} ms`);
  };
  const meta = metaSubject(bucket, name);
  const m = await direct.getMessage(stream, { last_by_subj: meta });
  if (!m) throw new Error(`object ${short} is not in the skill object store`);
  if (m.subject !== meta) throw new Error(`object ${short}: metadata read came from ${clip(m.subject ?? "")}`);
  let info: ObjectMeta;
  try {
    info = parseMeta(m.data);
  } catch (err) {
    throw new Error(`object ${short}: ${(err as Error).message}`);
  }
  // The object store's own get would follow a link, without a bound on
  // how many (one to itself never returns). Skill objects are never links.
  if (info.deleted) throw new Error(`object ${short} is not in the skill object store (deleted)`);
  if (info.link) throw new Error(`object ${short} is a link; skill objects never are`);
  if (info.name !== name) throw new Error(`object ${short}: its metadata names ${clip(info.name)}`);
  if (info.size > MAX_OBJECT_BYTES) {
    throw new Error(`object ${short} is ${info.size} bytes, over the limit of ${MAX_OBJECT_BYTES}`);
  }
  if (info.chunks > Math.max(info.size, 1)) throw new Error(`object ${short}: ${info.chunks} chunks for ${info.size} bytes`);
  if (!subjectToken(info.nuid)) throw new Error(`object ${short}: chunk id ${clip(info.nuid)}`);

  const subject = chunkSubject(bucket, info.nuid);
  const h = createHash("sha256");
  const parts: Uint8Array[] = [];
  let n = 0;
  let seq = 1;
  for (let i = 0; i < info.chunks; i++) {
    inTime();
    const c = await direct.getMessage(stream, { seq, next_by_subj: subject });
    if (!c) throw new Error(`object ${short} is not in the skill object store (${i} of its ${info.chunks} chunks)`);
    if (c.subject !== subject || !(c.seq >= seq)) {
      throw new Error(`object ${short}: chunk read at ${seq} came from ${clip(c.subject ?? "")} at ${c.seq}`);
    }
    n += c.data.length;
    if (n > info.size) throw new Error(`object ${short}: its chunks hold more than its ${info.size} bytes`);
    h.update(c.data);
    parts.push(c.data);
    seq = c.seq + 1;
  }
  if (n !== info.size) throw new Error(`object ${short}: its chunks hold ${n} of its ${info.size} bytes`);
  if (`SHA-256=${base64URLPadded(h.digest())}` !== info.digest) {
    throw new Error(`object ${short}: its chunks do not hash to the object's digest`);
  }
  return Buffer.concat(parts, n);
}

/**
 * materializeFromStore puts the files of the skill with digest into dir:
 * nothing when dir already holds exactly them, else fetched from the
 * object store bucket (direct gets only, fetchObject), verified and
 * written atomically and read-only.
 */
export async function materializeFromStore(
  direct: () => Promise<DirectStreamAPI>,
  bucket: string,
  digest: string,
  dir: string,
): Promise<void> {
  if (!validDigest(digest)) throw new Error(`digest ${JSON.stringify(digest.slice(0, 80))} is not 64 lowercase hex digits`);
  if (await holds(dir, digest)) return;
  const files = unpack(await fetchObject(await direct(), bucket, digest), digest);
  await writeSkill(files, digest, dir);
}
