// The README's TypeScript worker (examples/worker.ts), run as a newcomer
// runs it, against a real serve whose project folder holds one skill: the
// catalog lists the skill and the skill call returns its instructions.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";

import { here, Serve } from "./helpers.js";

const run = promisify(execFile);

let serve: Serve;
before(async () => {
  serve = await Serve.start();
});
after(async () => {
  await serve?.stop();
});

test("examples/worker.js: a pre-step shows the catalog, the skill call loads the first skill", async () => {
  const worker = join(here, "..", "examples", "worker.js");
  const { stdout } = await run(process.execPath, [worker, serve.cwd], {
    env: { ...process.env, SKILLSTREAM_URL: serve.url },
    timeout: 60_000,
  });
  for (const want of [
    "pre-step: appended\n",
    "- `a-skill`: A skill for tests.",
    'skill a-skill (the tool result for the model):\n<skill_content name="a-skill">',
    "Do the thing.",
  ]) {
    assert.ok(stdout.includes(want), `output lacks ${JSON.stringify(want)}:\n${stdout}`);
  }
});

test("examples/worker.js: -h and --help print the usage and exit 0 without connecting; an unknown flag exits 2", async () => {
  const worker = join(here, "..", "examples", "worker.js");
  // Where nothing listens: a worker that connected would fail.
  const env = { ...process.env, SKILLSTREAM_URL: "nats://127.0.0.1:1" };
  for (const flag of ["-h", "--help"]) {
    const { stdout, stderr } = await run(process.execPath, [worker, flag], { env, timeout: 60_000 });
    assert.ok(stdout.startsWith("usage: worker [PROJECT_DIR]\n") && stdout.includes("$SKILLSTREAM_URL"), stdout);
    assert.equal(stderr, "");
  }
  const failed = await run(process.execPath, [worker, "--verbose"], { env, timeout: 60_000 }).then(
    () => undefined,
    (err: { code?: number; stdout?: string; stderr?: string }) => err,
  );
  assert.equal(failed?.code, 2);
  assert.equal(failed?.stdout, "");
  assert.match(failed?.stderr ?? "", /--verbose/);
});
