// Lost answers and a processor killed mid-request: retries are new
// messages (new Nats-Msg-Id, same Reply-Inbox) and never append twice.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";

import { connect, skillTool, type ToolResult } from "../src/index.js";
import { TEST_HOOKS } from "../src/client.js";
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
    for (const id of ids) assert.match(id, /^killed:c1:[0-9a-f]{8}-\d+$/);
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
