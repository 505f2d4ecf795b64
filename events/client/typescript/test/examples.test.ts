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
