// Signed store skills: a client configured with trusted keys writes a
// store skill's files only when the result carries a signature by one of
// them that verifies (pushed with `skillstream skills push --sign`); an
// unsigned skill, one signed by another key, and a signature moved to
// another skill or scope are refused with UntrustedSkillError, nothing
// written.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";

import { connect, MaterializeError, untrustedReason, UntrustedSkillError, type SkillSignature, type ToolResult } from "../src/index.js";
import { removeTree, Serve, tempDir, writeSkill } from "./helpers.js";

let serve: Serve;
let work: string;
let trusted: string;
let other: string;

async function keygen(file: string): Promise<string> {
  const out = await serve.cli("skills", "keygen", "--out", file);
  const m = /public key (N[A-Z2-7]{55})/.exec(out);
  assert.ok(m, out);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  return m[1]!;
}

before(async () => {
  serve = await Serve.start();
  work = tempDir("trust");
  trusted = await keygen(join(work, "trusted.seed"));
  other = await keygen(join(work, "other.seed"));
  writeSkill(join(work, "a"), "signed-skill", "Signed by the trusted key.");
  writeSkill(join(work, "b"), "unsigned-skill", "Not signed.");
  writeSkill(join(work, "c"), "stranger-skill", "Signed by another key.");
  assert.match(await serve.cli("skills", "push", join(work, "a"), "--sign", join(work, "trusted.seed")), /signed by N/);
  await serve.cli("skills", "push", join(work, "b"));
  await serve.cli("skills", "push", join(work, "c"), "--sign", join(work, "other.seed"));
});
after(async () => {
  await serve?.stop();
  if (work) removeTree(work);
});

async function call(name: string, sid: string, trustedKeys?: string[]): Promise<ToolResult> {
  const c = await connect({ servers: serve.url, ...(trustedKeys ? { trustedKeys } : {}) });
  try {
    return await c.callSkill({ session: sid, call: "c1", args: { name }, resourceDir: join(work, "res-" + sid) }, { timeoutMs: 30_000 });
  } finally {
    await c.close();
  }
}

test("a skill signed by a trusted key is written; its result carries the signature", async () => {
  const r = await call("signed-skill", "t1", [trusted]);
  const sig = r.value!.signature as SkillSignature;
  assert.equal(sig.key, trusted);
  assert.equal(sig.scope, "global");
  assert.ok(existsSync(join(r.value!.resourceBase!.path!, "SKILL.md")));
});

test("unsigned and untrusted skills are refused and nothing is written", async () => {
  for (const [name, why] of [
    ["unsigned-skill", /revision not signed/],
    ["stranger-skill", /not trusted/],
  ] as const) {
    const sid = "u-" + name;
    await assert.rejects(call(name, sid, [trusted]), (err: unknown) => {
      assert.ok(err instanceof UntrustedSkillError && err instanceof MaterializeError, String(err));
      assert.match((err as Error).message, why);
      assert.equal(existsSync(join(work, "res-" + sid, name)), false);
      return true;
    });
    // Without trusted keys the same skill is written.
    const r = await call(name, "p-" + name);
    assert.ok(existsSync(join(r.value!.resourceBase!.path!, "SKILL.md")));
  }
});

test("a signature moved to another skill or scope does not verify", async () => {
  const r = await call("signed-skill", "t2");
  const v = r.value!;
  const sig = v.signature as SkillSignature;
  assert.equal(untrustedReason(v.name!, v.digest!, sig, [trusted]), undefined);
  assert.match(untrustedReason("stranger-skill", v.digest!, sig, [trusted])!, /does not verify/);
  assert.match(untrustedReason(v.name!, v.digest!, { ...sig, scope: "project/p1" }, [trusted])!, /does not verify/);
  assert.match(untrustedReason(v.name!, "0".repeat(64), sig, [trusted])!, /does not verify/);
  assert.match(untrustedReason(v.name!, v.digest!, sig, [other])!, /not trusted/);
  await assert.rejects(connect({ servers: serve.url, trustedKeys: ["SNOTAKEY"] }), /trustedKeys/);
});
