// The generated types' schemas against the Go side's wire fixtures
// (events/testdata): the same payloads conform, and the client's msgpack
// codec reads and writes the same bytes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { decode, encode } from "../src/codec.js";
import { checkPayload } from "../src/schema.js";
import { withContent } from "../src/index.js";
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

test("an invocation reads the same with the instructions twice (as written before) or once (in its text only)", () => {
  type Inv = { text: string; value: { content?: string } };
  for (const ext of [".json", ".msgpack"]) {
    const read = (name: string): Inv => {
      const b = readFileSync(join(testdata, name + ext));
      return (ext === ".json" ? JSON.parse(b.toString("utf8")) : decode("msgpack", b)) as Inv;
    };
    const old = read("skillinvocation-twocopies");
    const now = read("skillinvocation");
    assert.equal(now.value.content, undefined, `${ext}: the record carries value.content`);
    assert.deepEqual(withContent(now), withContent(old), ext);
    assert.equal(withContent(now).value.content, "# PDF tools\n\nUse pdftotext.", ext);
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

test("fuzz: random and mutated answer bytes decode to an error or a checked payload, never anything else", async () => {
  const { readFileSync: read } = await import("node:fs");
  const seeds = ["decision.msgpack", "toolresult.msgpack", "decision.json", "toolresult-error.json"].map((f) => ({
    f,
    b: read(join(testdata, f)),
  }));
  let seed = 0x9e3779b9;
  const rand = (n: number) => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) % n;
  };
  for (let i = 0; i < 5000; i++) {
    const { f, b } = seeds[rand(seeds.length)]!;
    const m = Buffer.from(b);
    for (let k = 1 + rand(3); k > 0; k--) m[rand(m.length)] = rand(256);
    const enc = f.endsWith(".json") ? "json" : "msgpack";
    let v: unknown;
    try {
      v = decode(enc, rand(5) === 0 ? m.subarray(0, rand(m.length)) : m);
    } catch (err) {
      assert.ok(err instanceof Error);
      continue;
    }
    // Whatever decoded is either refused by the schema or a payload of its shape.
    const p = checkPayload(f.startsWith("decision") ? "decision.json" : "toolresult.json", v, "lenient");
    if (p === null) assert.equal(typeof (v as { session: unknown }).session, "string");
  }
});
