// The TypeScript client against a real serve, side by side with the Go
// client: the same requests get the same answers, byte for byte in the
// model's text, in both encodings.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";

import { connect, skillTool, type Client, type Decision, type ToolResult } from "../src/index.js";
import { checkPayload } from "../src/schema.js";
import { Serve, sessionLog, type GoReply } from "./helpers.js";

let serve: Serve;
before(async () => {
  serve = await Serve.start();
});
after(async () => {
  await serve?.stop();
});

const visible = () => [{ name: "bash", owner: "agent" }, skillTool("skillstream")];
const hidden = () => [{ name: "bash", owner: "agent" }];

/** The requests both clients make, on session sid. */
function script(sid: string, cwd: string) {
  return [
    { op: "preStep", payload: { session: sid, step: "1", cwd, tools: visible() } }, // appended, initial
    { op: "preStep", payload: { session: sid, step: "2", cwd, tools: visible() } }, // unchanged
    { op: "preStep", payload: { session: sid, step: "3", cwd, tools: hidden() } }, // the tombstone
    { op: "preStep", payload: { session: sid, step: "4", cwd, tools: hidden() } }, // unchanged tombstone
    { op: "preStep", payload: { session: sid, step: "5", cwd, tools: visible() } }, // replacement
    { op: "callSkill", payload: { session: sid, call: "c1", cwd, args: { name: "a-skill" } } },
    { op: "callSkill", payload: { session: sid, call: "c2", cwd, args: { name: "no-such-skill" } } },
    { op: "callSkill", payload: { session: sid, call: "c3", cwd, args: { name: "Bad_Name" } } },
  ];
}

async function runTS(c: Client, reqs: ReturnType<typeof script>): Promise<(Decision | ToolResult)[]> {
  const out: (Decision | ToolResult)[] = [];
  for (const r of reqs) {
    const p = r.payload as never;
    out.push(r.op === "preStep" ? await c.preStep(p, { timeoutMs: 20_000 }) : await c.callSkill(p, { timeoutMs: 20_000 }));
  }
  return out;
}

/** What must be equal between two sessions' answers: everything but the session's own names and sequences. */
function comparable(a: Record<string, unknown>, sid: string): unknown {
  const s = JSON.stringify(a, (k, v) => (k === "triggerSeq" || k === "catalogSeq" ? undefined : v));
  return JSON.parse(s.split(sid).join("<session>"));
}

for (const encoding of ["msgpack", "json"] as const) {
  describe(`parity with the Go client (${encoding})`, () => {
    test("pre-steps and skill calls answer as the Go client's do", async () => {
      const c = await connect({ servers: serve.url, encoding });
      try {
        const tsSid = `ts-${encoding}`;
        const goSid = `go-${encoding}`;
        const ts = await runTS(c, script(tsSid, serve.cwd));
        const go: GoReply[] = await serve.goClient(encoding, script(goSid, serve.cwd));
        assert.equal(go.length, ts.length);

        const outcomes = ts.slice(0, 5).map((d) => (d as Decision).outcome);
        assert.deepEqual(outcomes, ["appended", "unchanged", "appended", "unchanged", "appended"]);
        const [first, , tomb, , back] = ts as Decision[];
        assert.match(first!.catalog!.text, /a-skill/);
        assert.equal(first!.catalog!.source.update, "initial");
        assert.deepEqual(tomb!.catalog!.source.entries, [], "the tombstone lists no skills");
        assert.equal(tomb!.reason, "no_skill_tool");
        assert.equal(back!.catalog!.source.update, "replacement");

        for (let i = 0; i < ts.length; i++) {
          const g = go[i]!;
          assert.equal(g.error, undefined, `Go request ${i}: ${g.error}`);
          const t = ts[i] as unknown as Record<string, unknown>;
          // Every answer is a valid payload of its schema.
          assert.equal(checkPayload(i < 5 ? "decision.json" : "toolresult.json", t, "strict"), null);
          assert.deepEqual(comparable(t, tsSid), comparable(g.answer!, goSid), `answer ${i}`);
          const tText = (t.catalog as { text?: string } | undefined)?.text ?? (t.text as string | undefined);
          const gText = (g.answer!.catalog as { text?: string } | undefined)?.text ?? (g.answer!.text as string | undefined);
          if (tText !== undefined) {
            assert.equal(Buffer.compare(Buffer.from(tText), Buffer.from(gText ?? "")), 0, `text of answer ${i} differs in bytes`);
          }
        }

        const [ok, unknown, invalid] = ts.slice(5) as ToolResult[];
        assert.equal(ok!.isError, false);
        assert.equal(ok!.value?.name, "a-skill");
        assert.match(ok!.text, /Do the thing\./);
        assert.equal(unknown!.isError, true);
        assert.equal(unknown!.error?.code, "unknown");
        assert.equal(invalid!.isError, true);
        assert.equal(invalid!.error?.code, "invalid_name");

        // catalogSeq names the catalog the model sees.
        const log = await sessionLog(c.connection, tsSid);
        const cats = log.filter((m) => m.subject.endsWith(".catalog.append")).map((m) => m.seq);
        assert.equal(cats.length, 3);
        assert.deepEqual(
          (ts.slice(0, 5) as Decision[]).map((d) => d.catalogSeq),
          [cats[0], cats[0], cats[1], cats[1], cats[2]],
        );
        // Triggers are stored in the chosen encoding.
        const pre = log.find((m) => m.subject.endsWith(".agent.pre-step"))!;
        assert.equal(pre.header("Content-Type"), encoding === "json" ? "application/json" : "application/msgpack");
      } finally {
        await c.close();
      }
    });
  });
}

test("compact keeping catalogSeq re-sends nothing; append stores any event", async () => {
  const c = await connect({ servers: serve.url });
  try {
    const sid = "ts-compact";
    const d = await c.preStep({ session: sid, step: "1", cwd: serve.cwd, tools: visible() }, { timeoutMs: 20_000 });
    assert.equal(d.outcome, "appended");
    const from = await c.append(sid, "message.user", { text: "hello" });
    assert.ok(from > d.catalogSeq!);
    const cseq = await c.compact({ session: sid, retainFrom: from, keep: [d.catalogSeq!] });
    assert.ok(cseq > from);
    const d2 = await c.preStep({ session: sid, step: "2", cwd: serve.cwd, tools: visible() }, { timeoutMs: 20_000 });
    assert.equal(d2.outcome, "unchanged");
    assert.equal(d2.catalogSeq, d.catalogSeq);
    // Without keeping it, the catalog is masked and sent again.
    await c.compact({ session: sid, retainFrom: await c.append(sid, "message.user", { text: "again" }) });
    const d3 = await c.preStep({ session: sid, step: "3", cwd: serve.cwd, tools: visible() }, { timeoutMs: 20_000 });
    assert.equal(d3.outcome, "appended");
    const log = await sessionLog(c.connection, sid);
    assert.deepEqual(
      log.map((m) => m.subject.slice(`ev.${sid}.`.length)),
      ["agent.pre-step", "catalog.append", "message.user", "context.compact", "agent.pre-step", "message.user", "context.compact", "agent.pre-step", "catalog.append"],
    );
  } finally {
    await c.close();
  }
});

test("toolDefinition returns the skill tool", async () => {
  for (const encoding of ["msgpack", "json"] as const) {
    const c = await connect({ servers: serve.url, encoding });
    try {
      const def = await c.toolDefinition({ timeoutMs: 10_000 });
      assert.equal(def.name, "skill");
      assert.ok(def.description.length > 0);
      assert.equal((def.parameters as { type?: string }).type, "object");
      assert.deepEqual((def.parameters as { required?: string[] }).required, ["name"]);
    } finally {
      await c.close();
    }
  }
});

test("many requests at once share one inbox subscription; maxPending bounds publications, not requests", async () => {
  const c = await connect({ servers: serve.url, maxPending: 1 });
  try {
    // One request first: nats.js opens its own request subscription (for publish acks) lazily.
    await c.preStep({ session: "many-warm", step: "0", cwd: serve.cwd, tools: visible() }, { timeoutMs: 30_000 });
    const subs = (c.connection as unknown as { protocol: { subscriptions: { size(): number } } }).protocol.subscriptions.size();
    const ds = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        c.preStep({ session: `many-${i % 10}`, step: String(i), cwd: serve.cwd, tools: visible() }, { timeoutMs: 30_000 }),
      ),
    );
    assert.equal(ds.length, 40);
    for (const [i, d] of ds.entries()) assert.equal(d.step, String(i));
    assert.equal(ds.filter((d) => d.outcome === "appended").length, 10, "one catalog per session");
    assert.equal((c.connection as unknown as { protocol: { subscriptions: { size(): number } } }).protocol.subscriptions.size(), subs);
    assert.equal(c.stats().droppedAnswers, 0);
  } finally {
    await c.close();
  }
});

test("on an existing connection: close() leaves it open; headers go on every publication", async () => {
  const nc = await serve.conn();
  try {
    const c = await connect({ connection: nc, encoding: "json" });
    const d = await c.preStep(
      { session: "own-conn", step: "1", cwd: serve.cwd, tools: visible() },
      { timeoutMs: 20_000, headers: { "X-Trace": "t-1" } },
    );
    assert.equal(d.outcome, "appended");
    const seq = await c.append("own-conn", "message.user", { text: "hi" }, { headers: { "X-Trace": "t-2" } });
    await c.close();
    assert.equal(nc.isClosed(), false);
    const log = await sessionLog(nc, "own-conn");
    const trigger = log.find((m) => m.subject.endsWith(".agent.pre-step"))!;
    assert.equal(trigger.header("X-Trace"), "t-1");
    const note = log.find((m) => m.seq === seq)!;
    assert.equal(note.header("X-Trace"), "t-2");
    assert.equal(note.header("Content-Type"), "application/json");
    assert.deepEqual(JSON.parse(Buffer.from(note.data).toString()), { text: "hi" });
  } finally {
    await nc.close();
  }
});
