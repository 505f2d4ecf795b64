// The store-format module against the Go format package: the fixture
// events/skillstore writes (go test ./events/skillstore -run
// TestFormatFixture -update) holds names, keys, digests, archives, paths
// and resource paths the Go code computed; this module must compute the
// same. No server needed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import {
  checkEntryPath,
  DEFAULT_BUCKET,
  DEFAULT_OBJECTS,
  digestFiles,
  indexKey,
  MAX_NAME_LENGTH,
  MAX_OBJECT_BYTES,
  MAX_PATH_LENGTH,
  MAX_SKILL_BYTES,
  MAX_SKILL_FILES,
  objectName,
  resourcePath,
  scopeFilter,
  shortDigest,
  unpack,
  validStoreName,
} from "../src/storeformat.js";
import { repoRoot } from "./helpers.js";

interface Fixture {
  buckets: { index: string; objects: string };
  limits: { maxFiles: number; maxBytes: number; maxObjectSize: number; maxNameLength: number; maxPathLength: number };
  names: { name: string; valid: boolean }[];
  keys: { scope: string; name: string; key: string; filter: string }[];
  digests: {
    files: { path: string; data: string | null }[] | null;
    digest: string;
    short: string;
    object: string;
    archive: string;
    resourceDir: string;
    skill: string;
    resourcePath: string;
  }[];
  paths: { path: string; valid: boolean }[];
  rejectArchives: { why: string; archive: string; digest: string }[];
}

const fx: Fixture = JSON.parse(readFileSync(join(repoRoot(), "events", "skillstore", "testdata", "format.json"), "utf8"));
const b64 = (s: string | null): Buffer => Buffer.from(s ?? "", "base64");

test("the fixture is the real one", () => {
  assert.ok(fx.names.length > 10 && fx.keys.length >= 2 && fx.digests.length >= 3 && fx.paths.length > 10 && fx.rejectArchives.length > 2);
});

test("bucket names and limits are the Go format's", () => {
  assert.deepEqual(fx.buckets, { index: DEFAULT_BUCKET, objects: DEFAULT_OBJECTS });
  assert.deepEqual(fx.limits, {
    maxFiles: MAX_SKILL_FILES,
    maxBytes: MAX_SKILL_BYTES,
    maxObjectSize: MAX_OBJECT_BYTES,
    maxNameLength: MAX_NAME_LENGTH,
    maxPathLength: MAX_PATH_LENGTH,
  });
});

test("store names: the same accepted and refused", () => {
  for (const { name, valid } of fx.names) assert.equal(validStoreName(name), valid, JSON.stringify(name));
});

test("index keys and scope filters", () => {
  for (const k of fx.keys) {
    assert.equal(indexKey(k.scope, k.name), k.key);
    assert.equal(scopeFilter(k.scope), k.filter);
  }
  assert.throws(() => indexKey("project/a.b", "x"), /scope/);
  assert.throws(() => indexKey("global", "A.b"), /not one the store accepts/);
});

test("digests, object names, short digests and resource paths", () => {
  for (const d of fx.digests) {
    const files = (d.files ?? []).map((f) => ({ path: f.path, data: b64(f.data) }));
    assert.equal(digestFiles(files), d.digest);
    assert.equal(objectName(d.digest), d.object);
    assert.equal(shortDigest(d.digest), d.short);
    assert.equal(resourcePath(d.resourceDir, d.skill, d.digest), d.resourcePath);
  }
});

test("the Go archives unpack to their files", () => {
  for (const d of fx.digests) {
    const got = unpack(b64(d.archive), d.digest);
    assert.deepEqual(
      got.map((f) => [f.path, Buffer.from(f.data).toString("base64")]),
      (d.files ?? []).map((f) => [f.path, f.data ?? ""]),
    );
  }
});

test("archives the Go format refuses are refused", () => {
  for (const r of fx.rejectArchives) assert.throws(() => unpack(b64(r.archive), r.digest), Error, r.why);
});

test("entry paths: the same accepted and refused", () => {
  for (const { path, valid } of fx.paths) {
    let ok = true;
    try {
      checkEntryPath(path);
    } catch {
      ok = false;
    }
    assert.equal(ok, valid, JSON.stringify(path));
  }
});
