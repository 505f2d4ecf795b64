// User invocation (/name) through a real serve started with
// --user-invocation: the decision carries the invocations, in gesture
// order, and the names that invoked nothing; a store skill among them is
// materialised where the client computes, before preStep returns.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";

import { connect, resourcePath, skillTool } from "../src/index.js";
import { removeTree, Serve, tempDir, writeSkill } from "./helpers.js";

let serve: Serve;
let work: string;
before(async () => {
  serve = await Serve.start(["--user-invocation"]);
  work = tempDir("invoke");
  const src = join(work, "src");
  writeSkill(src, "store-skill", "A skill from the store.", "Store instructions.\n");
  await serve.cli("skills", "push", src);
});
after(async () => {
  await serve?.stop();
  if (work) removeTree(work);
});

test("/name in userText: invocations after the catalog, ignored names, store skill materialised", async () => {
  const c = await connect({ servers: serve.url });
  try {
    const resourceDir = join(work, "res");
    const d = await c.preStep(
      { session: "invoke1", step: "1", tools: [skillTool("skillstream")], resourceDir, userText: ["use /store-skill and /nope but not 5/8"] },
      { timeoutMs: 30_000 },
    );
    assert.equal(d.outcome, "appended");
    assert.ok(d.catalog!.text.includes("A user may also invoke a skill directly"), d.catalog!.text);
    assert.equal(d.invocations?.length, 1);
    const inv = d.invocations![0]!;
    assert.equal(inv.name, "store-skill");
    assert.ok(inv.text.includes("Store instructions."), inv.text);
    assert.deepEqual(d.ignored, [{ name: "nope", reason: "unknown" }]);
    const dir = resourcePath(resourceDir, "store-skill", inv.value.digest!);
    assert.equal(inv.value.resourceBase?.path, dir);
    assert.match(readFileSync(join(dir, "SKILL.md"), "utf8"), /Store instructions\./);
    assert.equal(statSync(join(dir, "SKILL.md")).mode & 0o777, 0o444);

    // A retry of the step appends nothing new and answers the same.
    const again = await c.preStep(
      { session: "invoke1", step: "1", tools: [skillTool("skillstream")], resourceDir, userText: ["use /store-skill and /nope but not 5/8"] },
      { timeoutMs: 30_000 },
    );
    assert.deepEqual(again.invocations, d.invocations);
  } finally {
    await c.close();
  }
});
