// A minimal agent loop against a running `skillstream serve`: pre-step →
// show the catalog → call a skill → compact → pre-step again. The model is
// played by this program: it "calls" the first skill the catalog lists.
//
//   npm run example -- [--url nats://127.0.0.1:4222] [--cwd DIR] [--skill NAME]
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";

import { connect, skillTool, SkillstreamError } from "../src/index.js";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: process.env.SKILLSTREAM_URL ?? "nats://127.0.0.1:4222" },
    cwd: { type: "string", default: process.cwd() },
    skill: { type: "string" },
    session: { type: "string", default: `example-${Date.now()}` },
  },
});

const c = await connect({ servers: values.url });
try {
  const session = values.session!;
  const cwd = values.cwd!;
  const resourceDir = mkdtempSync(join(tmpdir(), "skillstream-example-"));
  const tools = [{ name: "bash", owner: "example-agent" }, skillTool("skillstream")];

  const def = await c.toolDefinition({ timeoutMs: 5000 });
  console.log(`tool to register with the model: ${def.name}: ${def.description}\n`);

  // Step 1: before the model is called.
  const d = await c.preStep({ session, step: "1", cwd, tools, resourceDir }, { timeoutMs: 5000 });
  console.log(`pre-step 1: ${d.outcome}${d.reason ? ` (${d.reason})` : ""}`);
  if (d.catalog) console.log(`--- user message for the model ---\n${d.catalog.text}\n---\n`);

  // The "model" calls the skill tool.
  const name = values.skill ?? d.catalog?.source.entries?.[0]?.name ?? "no-such-skill";
  const r = await c.callSkill({ session, call: "call-1", cwd, args: { name }, resourceDir }, { timeoutMs: 5000 });
  console.log(`skill ${name}: ${r.isError ? "error result" : `loaded from ${r.value?.provider}`}`);
  console.log(`--- tool result for the model ---\n${r.text.slice(0, 1500)}${r.text.length > 1500 ? "\n…" : ""}\n---\n`);
  if (r.value?.resourceBase?.path) console.log(`its files: ${r.value.resourceBase.path}\n`);

  // The context is compacted: keep the catalog, so it is not sent again.
  const seq = await c.compact({ session, retainFrom: r.triggerSeq, keep: d.catalogSeq ? [d.catalogSeq] : [] });
  console.log(`compacted at stream sequence ${seq}, keeping catalog ${d.catalogSeq ?? "(none)"}`);

  const d2 = await c.preStep({ session, step: "2", cwd, tools, resourceDir }, { timeoutMs: 5000 });
  console.log(`pre-step 2: ${d2.outcome} (catalog sequence ${d2.catalogSeq ?? "none"})`);
} catch (err) {
  console.error(err instanceof SkillstreamError ? `${err.name}: ${err.message}` : err);
  process.exitCode = 1;
} finally {
  await c.close();
}
