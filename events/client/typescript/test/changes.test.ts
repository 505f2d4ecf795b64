// Change lists (serve --catalog-updates changes): a Decision names every
// record of the list the model sees and carries the whole list, and
// catalogKeep keeps them all across a compaction.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { catalogKeep, connect, type Tool } from "../src/index.js";
import { Serve, poll, writeSkill } from "./helpers.js";

let serve: Serve;
before(async () => {
  serve = await Serve.start(["--catalog-updates", "changes"]);
});
after(async () => {
  await serve?.stop();
});

const visible = (): Tool[] => [{ name: "skill", owner: "skillstream" }];

test("a change list's decision names its records and list; catalogKeep keeps them", async () => {
  const skills = join(serve.cwd, ".agents", "skills");
  writeSkill(skills, "b-skill", "Does B.");
  writeSkill(skills, "c-skill", "Does C.");
  const c = await connect({ servers: serve.url });
  try {
    const sid = "ts-changes";
    let step = 0;
    const pre = () => c.preStep({ session: sid, step: String(++step), cwd: serve.cwd, tools: visible() }, { timeoutMs: 20_000 });
    const first = await poll("three skills", async () => {
      const d = await c.preStep({ session: "ts-changes-probe", step: String(Date.now()), cwd: serve.cwd, tools: visible() }, { timeoutMs: 20_000 });
      if (!d.catalog?.text.includes("c-skill")) throw new Error("not yet");
      return d;
    });
    assert.equal(first.outcome, "appended");
    const d1 = await pre();
    assert.equal(d1.outcome, "appended");
    assert.deepEqual(catalogKeep(d1), [d1.catalogSeq]);
    writeSkill(skills, "b-skill", "Does B, better.");
    const d2 = await poll("the change list", async () => {
      const d = await pre();
      if (d.outcome !== "appended") throw new Error(`outcome ${d.outcome}`);
      return d;
    });
    assert.equal(d2.catalog?.source.update, "changes");
    assert.deepEqual(d2.catalog?.source.changes, [{ name: "b-skill", change: "changed", description: "Does B, better." }]);
    assert.equal(d2.catalog?.source.entries, undefined);
    assert.deepEqual(catalogKeep(d2), [d1.catalogSeq, d2.catalogSeq]);
    assert.deepEqual(d2.currentList?.entries.map((e) => e.description), ["A skill for tests.", "Does B, better.", "Does C."]);
    await c.compact({ session: sid, retainFrom: await c.append(sid, "message.user", { text: "hello" }), keep: catalogKeep(d2) });
    const d3 = await pre();
    assert.equal(d3.outcome, "unchanged");
    assert.deepEqual(d3.catalogSeqs, catalogKeep(d2));
    assert.equal(d3.currentList?.digest, d2.currentList?.digest);
  } finally {
    await c.close();
  }
});
