// Releases: a store skill released to a share of sessions. The client
// materialises the revision its session was served, by the digest the
// result names: a session in the canary gets the candidate's files, one
// outside it the stable's (which session is which: the operator's
// preview, `skillstream catalog --session`).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";

import { connect, resourcePath } from "../src/index.js";
import { removeTree, Serve, tempDir, writeSkill } from "./helpers.js";

let serve: Serve;
let work: string;
before(async () => {
  serve = await Serve.start();
  work = tempDir("release");
});
after(async () => {
  await serve?.stop();
  if (work) removeTree(work);
});

/** Writes rel-skill with a script that echoes what. */
function writeRelSkill(src: string, what: string): void {
  writeSkill(src, "rel-skill", "A released skill.", "Run scripts/run.sh.\n");
  mkdirSync(join(src, "rel-skill", "scripts"), { recursive: true });
  writeFileSync(join(src, "rel-skill", "scripts", "run.sh"), `#!/bin/sh\necho ${what}\n`);
}

interface Origin {
  rev?: number;
  digest?: string;
  channel?: string;
}

/** What the operator's preview says session sid gets of rel-skill. */
async function served(sid: string): Promise<Origin> {
  const out = await serve.cli("catalog", "--json", "--no-bundled", "--user-skills-dir=", "--cwd", work, "--session", sid);
  const v = JSON.parse(out) as { skills: { name: string; origin?: Origin }[] };
  const s = v.skills.find((s) => s.name === "rel-skill");
  assert.ok(s?.origin, `catalog --session ${sid} lists rel-skill with its origin: ${out}`);
  return s.origin;
}

test("a canary session materialises the candidate's files, a stable session the stable's", async () => {
  const src = join(work, "src");
  writeRelSkill(src, "stable");
  await serve.cli("skills", "push", src);
  writeRelSkill(src, "candidate");
  assert.match(await serve.cli("skills", "push", src, "--draft"), /draft: offered to no session/);
  await serve.cli("skills", "release", "rel-skill", "2", "--canary", "50%");

  const c = await connect({ servers: serve.url });
  try {
    const seen = new Map<string, string>();
    for (let i = 0; seen.size < 2 && i < 40; i++) {
      const sid = `rel-${i}`;
      const o = await served(sid);
      if (seen.has(o.channel!)) continue;
      const resourceDir = join(work, "res");
      const r = await c.callSkill({ session: sid, call: "c1", args: { name: "rel-skill" }, resourceDir }, { timeoutMs: 30_000 });
      assert.equal(r.isError, false, r.text);
      const v = r.value;
      assert.equal(v!.digest, o.digest, `${sid}: the result names the revision the preview says`);
      assert.equal(v!.channel, o.channel);
      assert.equal(v!.rev, o.rev);
      const dir = resourcePath(resourceDir, "rel-skill", o.digest!);
      assert.equal(v!.resourceBase!.path, dir);
      const want = o.channel === "canary" ? "candidate" : "stable";
      assert.equal(o.rev, want === "candidate" ? 2 : 1);
      assert.equal(readFileSync(join(dir, "scripts", "run.sh"), "utf8"), `#!/bin/sh\necho ${want}\n`);
      seen.set(o.channel!, sid);
    }
    assert.deepEqual([...seen.keys()].sort(), ["canary", "stable"], "40 sessions of a 50% canary fall on both sides");
  } finally {
    await c.close();
  }
});
