// The generated types' schemas against the Go side's wire fixtures
// (events/testdata): the same payloads conform, and the client's msgpack
// codec reads and writes the same bytes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { decode, encode } from "../src/codec.js";
import { checkPayload } from "../src/schema.js";
import type { Decision, PreStep, ToolResult } from "../src/index.js";
import { repoRoot } from "./helpers.js";

const testdata = join(repoRoot(), "events", "testdata");
const schemaOf = (fixture: string) => fixture.replace(/-.*$/, "").replace(/\.json$/, "") + ".json";

test("every wire fixture conforms to its schema, strictly", () => {
  const fixtures = readdirSync(testdata).filter((f) => f.endsWith(".json"));
  assert.ok(fixtures.length >= 8);
  for (const f of fixtures) {
    const v = JSON.parse(readFileSync(join(testdata, f), "utf8"));
    assert.equal(checkPayload(schemaOf(f), v, "strict"), null, f);
  }
});

test("the msgpack fixtures decode to the JSON fixtures, and encode back to the same bytes", () => {
  for (const f of readdirSync(testdata).filter((f) => f.endsWith(".msgpack"))) {
    const bytes = readFileSync(join(testdata, f));
    const json = JSON.parse(readFileSync(join(testdata, f.replace(/\.msgpack$/, ".json")), "utf8"));
    assert.deepEqual(decode("msgpack", bytes), json, f);
    assert.equal(Buffer.compare(Buffer.from(encode("msgpack", json)), bytes), 0, `${f}: encoding differs`);
  }
});

test("payloads that break the schema are named by field", () => {
  const ps = JSON.parse(readFileSync(join(testdata, "prestep.json"), "utf8")) as PreStep;
  const cases: [unknown, string][] = [
    [{ ...ps, session: undefined }, "session"],
    [{ ...ps, tools: [{ name: "x" }] }, "tools[0].owner"],
    [{ ...ps, deadlineMs: 1.5 }, "deadlineMs"],
    [{ ...ps, step: "" }, "step"],
    [{ ...ps, v: 3 }, "v"],
  ];
  for (const [v, field] of cases) assert.equal(checkPayload("prestep.json", v, "strict")?.field, field);
  // Answers are read leniently: a newer processor's new outcome is not an error; v still is.
  const d = JSON.parse(readFileSync(join(testdata, "decision.json"), "utf8")) as Decision;
  assert.equal(checkPayload("decision.json", { ...d, outcome: "some-new-outcome" }, "lenient"), null);
  assert.equal(checkPayload("decision.json", { ...d, outcome: "some-new-outcome" }, "strict")?.field, "outcome");
  assert.equal(checkPayload("decision.json", { ...d, v: 2 }, "lenient")?.field, "v");
  const r = JSON.parse(readFileSync(join(testdata, "toolresult.json"), "utf8")) as ToolResult;
  assert.equal(checkPayload("toolresult.json", { ...r, isError: "no" }, "lenient")?.field, "isError");
  assert.equal(checkPayload("toolresult.json", { ...r, triggerSeq: -1 }, "lenient")?.field, "triggerSeq");
});
