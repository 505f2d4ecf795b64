// Lost answers and a processor killed mid-request: retries are new
// messages (new Nats-Msg-Id, same Reply-Inbox) and never append twice.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";

import { headers as natsHeaders } from "@nats-io/transport-node";
import { jetstream } from "@nats-io/jetstream";

import { connect, skillTool, type ToolResult } from "../src/index.js";
import { TEST_HOOKS } from "../src/client.js";
import { contentType, encode } from "../src/codec.js";
import { Serve, sessionLog } from "./helpers.js";

let serve: Serve;
before(async () => {
  serve = await Serve.start();
});
after(async () => {
  await serve?.stop();
});

test("an answer lost while serve is SIGKILLed and restarted: the retry gets the appended output, stored once", async () => {
  let lost = 0;
  let sawAnswer!: () => void;
  const answered = new Promise<void>((r) => (sawAnswer = r));
  const c = await connect({
    servers: serve.url,
    retryIntervalMs: 300,
    reconnectTimeWait: 100,
    [TEST_HOOKS]: {
      dropAnswer: () => {
        if (lost > 0) return false;
        lost++;
        sawAnswer();
        return true; // the first answer never arrives
      },
    },
  });
  try {
    const sid = "killed";
    const attempts: number[] = [];
    const call = c.callSkill(
      { session: sid, call: "c1", cwd: serve.cwd, args: { name: "a-skill" } },
      { timeoutMs: 60_000, onAttempt: (n) => attempts.push(n) },
    );
    // The output is appended and answered (the answer lost); then serve dies.
    await answered;
    await serve.kill("SIGKILL");
    await serve.restart();
    const r: ToolResult = await call;
    assert.equal(r.isError, false);
    assert.equal(r.value?.name, "a-skill");
    assert.ok(attempts.length >= 2, `${attempts.length} attempts`);

    const log = await sessionLog(c.connection, sid);
    const results = log.filter((m) => m.subject.endsWith(".tool.result"));
    assert.equal(results.length, 1, "exactly one output for the call");
    const triggers = log.filter((m) => m.subject.endsWith(".tool.call.skill"));
    assert.ok(triggers.length >= 2, `${triggers.length} triggers stored`);
    // The answer accepted answers one of the stored attempts.
    assert.ok(triggers.some((t) => t.seq === r.triggerSeq));
    const ids = triggers.map((t) => t.header("Nats-Msg-Id"));
    assert.equal(new Set(ids).size, ids.length, `Msg-Ids repeat: ${ids.join(" ")}`);
    // The trigger's 128 random bits, the same on every attempt, and the
    // attempt: nothing of the session or call (JetStream tells anyone the
    // stream's last Msg-Id), and no one can take one first.
    for (const id of ids) assert.match(id, /^[0-9a-f]{32}-\d+$/);
    assert.equal(new Set(ids.map((id) => id.split("-")[0])).size, 1, `one trigger id: ${ids.join(" ")}`);
    const inboxes = new Set(triggers.map((t) => t.header("Reply-Inbox")));
    assert.equal(inboxes.size, 1, "one Reply-Inbox for every attempt");
    assert.match([...inboxes][0]!, /^_INBOX\./);

    // The same for a pre-step: an answer lost once more after the restart.
    lost = 0;
    const d = await c.preStep({ session: sid, step: "1", cwd: serve.cwd, tools: [skillTool()] }, { timeoutMs: 30_000 });
    assert.equal(d.outcome, "appended");
    const cats = (await sessionLog(c.connection, sid)).filter((m) => m.subject.endsWith(".catalog.append"));
    assert.equal(cats.length, 1);
    assert.equal(d.catalogSeq, cats[0]!.seq);
    assert.ok(c.stats().droppedAnswers >= 0);
  } finally {
    await c.close();
  }
});

test("maxAttempts bounds the retries; every attempt is a new message", async () => {
  // No stream takes the prefix "nobody": no attempt is ever answered.
  const c = await connect({ servers: serve.url, prefix: "nobody", retryIntervalMs: 100, maxAttempts: 3 });
  try {
    const attempts: number[] = [];
    await assert.rejects(
      c.preStep({ session: "s", step: "1", tools: [] }, { onAttempt: (n) => attempts.push(n) }),
      (err: Error) => err.name === "TimeoutError" && /after 3 attempt/.test(err.message),
    );
    assert.deepEqual(attempts, [1, 2, 3]);
  } finally {
    await c.close();
  }
});

test("an attempt whose Msg-Id another message took first is not the request's: it is published again at once", async () => {
  // The trigger id known in advance, as a guessable one would be: someone
  // publishes first under the first attempt's Msg-Id (deduplication is
  // stream-wide, so any subject of the stream will do).
  const triggerID = "0123456789abcdef0123456789abcdef";
  const sid = "taken";
  const nc = await serve.conn();
  const c = await connect({ servers: serve.url, retryIntervalMs: 60_000, [TEST_HOOKS]: { triggerID } });
  try {
    const h = natsHeaders();
    h.set("Content-Type", contentType("msgpack"));
    h.set("Reply-Inbox", "_INBOX.nowhere.1");
    const forged = await jetstream(nc).publish(
      "ev.other.tool.call.skill",
      encode("msgpack", { v: 1, session: "other", call: "c1", cwd: serve.cwd, args: { name: "a-skill" } }),
      { msgID: `${triggerID}-1`, headers: h },
    );
    assert.equal(forged.duplicate, false);

    const attempts: number[] = [];
    const start = Date.now();
    // Were the duplicate's sequence taken for the first attempt's, the
    // request would wait for an answer to it until the retry interval
    // (60 s), past this timeout.
    const r = await c.callSkill(
      { session: sid, call: "c1", cwd: serve.cwd, args: { name: "a-skill" } },
      { timeoutMs: 20_000, onAttempt: (n) => attempts.push(n) },
    );
    assert.equal(r.isError, false, r.text);
    assert.deepEqual(attempts, [1, 2]);
    assert.ok(Date.now() - start < 20_000);
    const triggers = (await sessionLog(nc, sid)).filter((m) => m.subject.endsWith(".tool.call.skill"));
    assert.deepEqual(
      triggers.map((t) => t.header("Nats-Msg-Id")),
      [`${triggerID}-2`],
      "only the second attempt is stored in the session",
    );
    assert.equal(r.triggerSeq, triggers[0]!.seq);
    assert.notEqual(r.triggerSeq, forged.seq);
  } finally {
    await c.close();
    await nc.close();
  }
});
