// A project file that is not a skill reaches the worker as a diagnostic
// of the pre-step's decision, never the model's catalog.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { connect, skillTool } from "../src/index.js";
import { Serve } from "./helpers.js";

let serve: Serve;
before(async () => {
  serve = await Serve.start();
});
after(async () => {
  await serve?.stop();
});

test("diagnostics: a SKILL.md that does not parse is named, with the reason, in the decision", async () => {
  const broken = join(serve.cwd, ".agents", "skills", "broken", "SKILL.md");
  mkdirSync(join(broken, ".."), { recursive: true });
  writeFileSync(broken, "---\nname: broken\ndescription: [unclosed\n---\nBody.\n");
  const c = await connect({ servers: serve.url });
  try {
    const d = await c.preStep(
      { session: "diag-ts", step: "1", cwd: serve.cwd, tools: [skillTool()] },
      { timeoutMs: 20_000 },
    );
    assert.equal(d.outcome, "appended");
    assert.equal(d.diagnostics?.length, 1, JSON.stringify(d.diagnostics));
    const [dg] = d.diagnostics ?? [];
    assert.equal(dg?.path, broken);
    assert.ok((dg?.reason ?? "").length > 0);
    assert.ok(!d.catalog!.text.includes("broken"), d.catalog!.text);
  } finally {
    await c.close();
  }
});
