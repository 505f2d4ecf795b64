// Store skills' files on the worker's host: fetched by digest from the
// skill store's object store, checked (storeformat.ts: the archive, its
// paths, the digest) and written atomically and read-only.
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
import type { ObjectStore } from "@nats-io/obj";

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

/** fetchObject reads the object named digest, at most MAX_OBJECT_BYTES. */
export async function fetchObject(os: ObjectStore, digest: string): Promise<Uint8Array> {
  // The object store's get follows links within a bucket without a bound:
  // a link to itself would never return. Skill objects are never links.
  const info = await os.info(objectName(digest));
  if (info?.options?.link) {
    throw new Error(`object ${shortDigest(digest)} is a link; skill objects never are`);
  }
  const r = await os.get(objectName(digest));
  if (!r) throw new Error(`object ${shortDigest(digest)} is not in the skill object store`);
  if (r.info.size > MAX_OBJECT_BYTES) {
    throw new Error(`object ${shortDigest(digest)} is ${r.info.size} bytes, over the limit of ${MAX_OBJECT_BYTES}`);
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
      throw new Error(`object ${shortDigest(digest)} is over the limit of ${MAX_OBJECT_BYTES} bytes`);
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
