// The owner session layout against a real serve --session-layout owner: a
// client with { layout: "owner" } steps, calls a skill, compacts and
// appends in a session "a1.s7", whose events land on ev.a1.s7.<kind>;
// session ids of the other layout are refused before anything is sent,
// saying which form the layout wants.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { type NatsConnection } from "@nats-io/transport-node";

import { BadPayloadError, catalogKeep, connect, skillTool, type Client } from "../src/index.js";
import { Serve, sessionLog } from "./helpers.js";

let serve: Serve;
let nc: NatsConnection;
before(async () => {
  serve = await Serve.start(["--session-layout", "owner"]);
  nc = await serve.conn();
});
after(async () => {
  await nc?.close();
  await serve?.stop();
});

const tools = () => [{ name: "bash", owner: "agent" }, skillTool()];

test("layout owner: a session <owner>.<sid> end to end, on <prefix>.<owner>.<sid>.<kind>", async () => {
  // Each owner's worker with inboxes of its own: the owner layout answers
  // a session's triggers only under _INBOX.<owner>.
  const c = await connect({ servers: serve.url, layout: "owner", inboxPrefix: "_INBOX.a1" });
  const c2 = await connect({ servers: serve.url, layout: "owner", inboxPrefix: "_INBOX.a2" });
  try {
    assert.equal(c.layout, "owner");
    const sid = "a1.s7";
    const d = await c.preStep({ session: sid, step: "1", cwd: serve.cwd, tools: tools() }, { timeoutMs: 20_000 });
    assert.equal(d.outcome, "appended");
    assert.equal(d.session, sid);
    assert.equal(d.catalog?.session, sid);
    assert.equal(d.catalog?.id, "a1.s7:1:catalog.append");
    const r = await c.callSkill({ session: sid, call: "c1", cwd: serve.cwd, args: { name: "a-skill" } }, { timeoutMs: 20_000 });
    assert.equal(r.isError, false, r.text);
    assert.equal(r.session, sid);
    await c.compact({ session: sid, retainFrom: 1, keep: catalogKeep(d) });
    await c.append(sid, "message.user", { text: "hello" });
    const again = await c.preStep({ session: sid, step: "2", cwd: serve.cwd, tools: tools() }, { timeoutMs: 20_000 });
    assert.equal(again.outcome, "unchanged");

    const log = await sessionLog(nc, sid);
    assert.deepEqual(
      log.map((e) => e.subject),
      [
        "ev.a1.s7.agent.pre-step",
        "ev.a1.s7.catalog.append",
        "ev.a1.s7.tool.call.skill",
        "ev.a1.s7.tool.result",
        "ev.a1.s7.context.compact",
        "ev.a1.s7.message.user",
        "ev.a1.s7.agent.pre-step",
      ],
    );
    // Another owner's session of the same token is another session.
    const other = await c2.preStep({ session: "a2.s7", step: "1", cwd: serve.cwd, tools: tools() }, { timeoutMs: 20_000 });
    assert.equal(other.outcome, "appended");
  } finally {
    await c.close();
    await c2.close();
  }
});

test("session ids of the other layout are refused before anything is sent", async () => {
  const flat = await connect({ servers: serve.url });
  const owner = await connect({ servers: serve.url, layout: "owner" });
  try {
    const cases: [string, Client, string, RegExp][] = [
      ["flat client, owner id", flat, "x1.refused", /layout option "owner"/],
      ["owner client, flat id", owner, "refused", /the owner layout wants <owner>\.<session>/],
      ["owner client, three tokens", owner, "x1.refused.x", /want <owner>\.<session>/],
      ["owner client, empty owner", owner, ".refused", /want <owner>\.<session>/],
    ];
    for (const [name, c, sid, want] of cases) {
      const refused = (err: unknown) => err instanceof BadPayloadError && err.field === "session" && want.test(err.message);
      await assert.rejects(c.preStep({ session: sid, step: "1", tools: tools() }), refused, `${name}: preStep`);
      await assert.rejects(c.callSkill({ session: sid, call: "1", args: { name: "a-skill" } }), refused, `${name}: callSkill`);
      await assert.rejects(c.searchSkills({ session: sid, call: "2", args: { query: "x" } }), refused, `${name}: searchSkills`);
      await assert.rejects(c.compact({ session: sid, retainFrom: 1 }), refused, `${name}: compact`);
      await assert.rejects(c.append(sid, "message.user", {}), refused, `${name}: append`);
    }
    for (const sid of ["x1.refused", "refused", "x1.refused.x"]) {
      assert.deepEqual(await sessionLog(nc, sid), [], sid);
    }
  } finally {
    await flat.close();
    await owner.close();
  }
});

test("an unknown layout is refused", async () => {
  await assert.rejects(
    connect({ servers: serve.url, layout: "tenant" as never }),
    (err: unknown) => err instanceof BadPayloadError && err.field === "layout",
  );
});
