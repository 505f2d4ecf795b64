// Skill search against a real serve --skill-search: the tool definitions,
// a search by what a skill does, pages, no match, the tool's argument
// errors as results, a retry answered from the log, the store floor, the
// catalog that points to search; and a serve without search.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { decode } from "@msgpack/msgpack";

import {
  BadPayloadError,
  connect,
  isSearchArgsError,
  RejectedError,
  searchValue,
  skillSearchTool,
  skillTool,
  UnavailableError,
  type Client,
  type SkillSearchInput,
  type ToolResult,
} from "../src/index.js";
import { TEST_HOOKS } from "../src/client.js";
import { Serve, sessionLog, writeSkill } from "./helpers.js";

let on: Serve; // --skill-search --catalog-listed-max 2
let off: Serve; // without search
before(async () => {
  [on, off] = await Promise.all([Serve.start(["--skill-search", "--catalog-listed-max", "2"]), Serve.start()]);
  const skills = join(on.cwd, ".agents", "skills"); // beside a-skill
  writeSkill(skills, "pdf-forms", "Fill in PDF forms and flatten them.");
  writeSkill(skills, "rotate-logs", "Rotate and compress the log files of a service.");
  writeSkill(skills, "log-search", "Find errors in the logs of a service.");
  writeSkill(skills, "deploy-k8s", "Deploy services to Kubernetes clusters.");
});
after(async () => {
  await Promise.all([on?.stop(), off?.stop()]);
});

async function withClient<T>(serve: Serve, f: (c: Client) => Promise<T>, opts: Parameters<typeof connect>[0] = {}): Promise<T> {
  const c = await connect({ servers: serve.url, ...opts });
  try {
    return await f(c);
  } finally {
    await c.close();
  }
}

const search = (c: Client, session: string, call: string, args: SkillSearchInput["args"]): Promise<ToolResult> =>
  c.searchSkills({ session, call, cwd: on.cwd, args }, { timeoutMs: 20_000 });

const names = (r: ToolResult): string[] => searchValue(r)?.results.map((e) => e.name) ?? [];

test("toolDefinitions: skill and skill_search with --skill-search, skill alone without", async () => {
  for (const encoding of ["msgpack", "json"] as const) {
    const defs = await withClient(on, (c) => c.toolDefinitions({ timeoutMs: 10_000 }), { encoding });
    assert.deepEqual(
      defs.map((d) => d.name),
      ["skill", "skill_search"],
    );
    const s = defs[1]!;
    assert.equal(
      s.description,
      "Search the skills available in this session by what they do. Use it when the task may benefit from a skill that the session skill catalog does not list, then load a skill it finds with the `skill` tool by its exact name.",
    );
    assert.deepEqual((s.parameters as { required?: string[] }).required, ["query"]);
  }
  const plain = await withClient(off, (c) => c.toolDefinitions({ timeoutMs: 10_000 }));
  assert.deepEqual(
    plain.map((d) => d.name),
    ["skill"],
  );
});

test("searchSkills finds a skill by what it does: the model's text and the typed value, recorded once", async () => {
  await withClient(on, async (c) => {
    const r = await search(c, "find", "s1", { query: "  fill in a PDF form  " });
    assert.equal(
      r.text,
      '<skill_search_results query="fill in a PDF form" shown="1" total="1">\n' +
        "- `pdf-forms`: Fill in PDF forms and flatten them.\n" +
        "</skill_search_results>\n\n" +
        "Load a skill with the `skill` tool by its exact name before following it.",
    );
    assert.equal(r.isError, false);
    assert.deepEqual(searchValue(r), {
      query: "fill in a PDF form",
      offset: 0,
      total: 1,
      results: [{ name: "pdf-forms", description: "Fill in PDF forms and flatten them." }],
    });
    const log = await sessionLog(c.connection, "find");
    assert.deepEqual(
      log.map((m) => m.subject),
      ["ev.find.tool.call.skill_search", "ev.find.tool.result"],
    );
    assert.equal((decode(log[1]!.data) as ToolResult).text, r.text);
  });
});

test("searchSkills pages: limit and offset, the More matches line, an offset past the matches", async () => {
  await withClient(
    on,
    async (c) => {
      const first = await search(c, "pages", "p1", { query: "logs", limit: 1 });
      assert.match(first.text, /shown="1" total="2"/);
      assert.ok(first.text.includes('\nMore matches: call `skill_search` again with "offset": 1.\n'), first.text);
      assert.deepEqual([searchValue(first)?.offset, searchValue(first)?.total], [0, 2]);
      const second = await search(c, "pages", "p2", { query: "logs", limit: 1, offset: 1 });
      assert.match(second.text, /shown="1" total="2"/);
      assert.ok(!second.text.includes("More matches"), second.text);
      assert.deepEqual([...names(first), ...names(second)].sort(), ["log-search", "rotate-logs"]);
      const past = await search(c, "pages", "p3", { query: "logs", offset: 2 });
      assert.equal(past.text, 'No available skill matches "logs". Continue without a skill, or search again with other words.');
      assert.deepEqual(searchValue(past), { query: "logs", offset: 2, total: 2, results: [] });
    },
    { encoding: "json" },
  );
});

test("searchSkills: no match is a result for the model, its query escaped", async () => {
  await withClient(on, async (c) => {
    const r = await search(c, "none", "s1", { query: 'zebra "husbandry" & <care>' });
    assert.equal(r.isError, false);
    assert.equal(
      r.text,
      'No available skill matches "zebra &quot;husbandry&quot; &amp; &lt;care>". Continue without a skill, or search again with other words.',
    );
    assert.deepEqual(searchValue(r), { query: 'zebra "husbandry" & <care>', offset: 0, total: 0, results: [] });
  });
});

test("searchSkills: arguments the tool refuses are its error result for the model, recorded, not thrown", async () => {
  await withClient(on, async (c) => {
    const cases: [SkillSearchInput["args"], string][] = [
      [{}, "query is missing"],
      [{ query: null }, "query is missing"],
      [{ query: " \t " }, "query is empty"],
      [{ query: 5 }, "query must be a string, not a number"],
      [{ query: ["logs"] }, "query must be a string, not an array"],
      [{ query: "logs", limit: 99 }, "limit must be an integer from 1 to 16, not 99"],
      [{ query: "logs", limit: "4" }, "limit must be an integer from 1 to 16, not a string"],
      [{ query: "logs", offset: -1.5 }, "offset must be an integer from 0 to 100000, not -1.5"],
    ];
    for (const [i, [args, want]] of cases.entries()) {
      const r = await search(c, "bad", `bad-${i}`, args);
      assert.equal(r.text, `Error: invalid search arguments: ${want}`, JSON.stringify(args));
      assert.equal(r.isError, true);
      assert.equal(r.error?.code, "bad_request");
      assert.ok(isSearchArgsError(r));
      assert.equal(searchValue(r), undefined);
    }
    const results = (await sessionLog(c.connection, "bad")).filter((m) => m.subject.endsWith(".tool.result"));
    assert.equal(results.length, cases.length, "one result per call");
  });
});

test("searchSkills: a lost answer is retried, answered from the log, one tool.result", async () => {
  let answers = 0;
  await withClient(
    on,
    async (c) => {
      const attempts: number[] = [];
      const r = await c.searchSkills(
        { session: "retry", call: "s1", cwd: on.cwd, args: { query: "kubernetes deploy" } },
        { timeoutMs: 20_000, onAttempt: (n) => attempts.push(n) },
      );
      assert.deepEqual(names(r), ["deploy-k8s"]);
      assert.ok(attempts.length >= 2 && answers >= 2, `${attempts.length} attempts, ${answers} answers`);
      const log = await sessionLog(c.connection, "retry");
      const triggers = log.filter((m) => m.subject.endsWith(".tool.call.skill_search"));
      const results = log.filter((m) => m.subject.endsWith(".tool.result"));
      assert.ok(triggers.length >= 2, `${triggers.length} searches stored`);
      assert.notEqual(triggers[0]!.header("Nats-Msg-Id"), triggers[1]!.header("Nats-Msg-Id"));
      assert.equal(results.length, 1, "exactly one output for the call");
      const stored = decode(results[0]!.data) as ToolResult;
      assert.equal(stored.text, r.text);
      assert.equal(stored.triggerSeq, triggers[0]!.seq);
    },
    { retryIntervalMs: 300, [TEST_HOOKS]: { dropAnswer: () => ++answers === 1 } },
  );
});

test("searchSkills carries the store floor: a store token of other buckets is UnavailableError", async () => {
  await withClient(
    on,
    async (c) => {
      await assert.rejects(search(c, "floor", "s1", { query: "logs" }), (err: unknown) => err instanceof UnavailableError);
      const [t] = await sessionLog(c.connection, "floor");
      const ss = decode(t!.data) as { minStoreEpoch?: string; minStoreRevision?: number; deadlineMs?: number };
      assert.equal(ss.minStoreEpoch, "e1");
      assert.equal(ss.minStoreRevision, 7);
      assert.ok(ss.deadlineMs);
    },
    { storeToken: "e1:7" },
  );
});

test("searchSkills: invalid input throws BadPayloadError before anything is sent", async () => {
  await withClient(on, async (c) => {
    await assert.rejects(
      c.searchSkills({ session: "a.b", call: "s1", args: { query: "logs" } }),
      (err: unknown) => err instanceof BadPayloadError && err.field === "session",
    );
    await assert.rejects(
      c.searchSkills({ session: "a", args: { query: "logs" } } as unknown as SkillSearchInput),
      (err: unknown) => err instanceof BadPayloadError && err.field === "call",
    );
    await assert.rejects(
      c.searchSkills({ session: "a", call: "s1", args: "logs" } as unknown as SkillSearchInput),
      (err: unknown) => err instanceof BadPayloadError && err.field === "args",
    );
    assert.deepEqual(await sessionLog(c.connection, "a"), []);
  });
});

test("a serve without --skill-search rejects a search", async () => {
  await withClient(off, async (c) => {
    await assert.rejects(
      c.searchSkills({ session: "off", call: "s1", cwd: off.cwd, args: { query: "logs" } }, { timeoutMs: 20_000 }),
      (err: unknown) =>
        err instanceof RejectedError &&
        err.code === "bad_request" &&
        err.result !== undefined &&
        !isSearchArgsError(err.result) &&
        err.result.text.includes("skill search is off"),
    );
  });
});

test("a tool view with skill and skill_search: the catalog lists --catalog-listed-max skills and points to search", async () => {
  await withClient(on, async (c) => {
    const notice = "(3 more skills are available but not listed here. Call the `skill_search` tool to find them by what they do.)";
    const offered = await c.preStep(
      { session: "offered", step: "1", cwd: on.cwd, tools: [skillTool(), skillSearchTool()] },
      { timeoutMs: 20_000 },
    );
    assert.equal(offered.catalog?.source.entries?.length, 2);
    assert.ok(offered.catalog?.text.includes(notice), offered.catalog?.text);
    const plain = await c.preStep({ session: "plain", step: "1", cwd: on.cwd, tools: [skillTool()] }, { timeoutMs: 20_000 });
    assert.equal(plain.catalog?.source.entries?.length, 5);
    assert.ok(!plain.catalog?.text.includes("skill_search"), plain.catalog?.text);
  });
});
