// The README's own worker app and its CommonJS import, run as a newcomer
// runs them: each written into an app of its own beside an installed
// @skillstream/client (this package), against a real serve.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

import { here, removeTree, Serve, tempDir } from "./helpers.js";

const run = promisify(execFile);
const pkg = join(here, "..", "..");

/** The bodies of the README's fenced blocks of language lang, in order. */
function blocks(lang: string): string[] {
  const out: string[] = [];
  let cur: string[] | undefined;
  for (const line of readFileSync(join(pkg, "README.md"), "utf8").split("\n")) {
    if (cur === undefined && line.trim() === "```" + lang) cur = [];
    else if (cur !== undefined && line.trim() === "```") {
      out.push(cur.join("\n") + "\n");
      cur = undefined;
    } else cur?.push(line);
  }
  assert.equal(cur, undefined, `README: a ${lang} block is never closed`);
  return out;
}

let serve: Serve;
let app: string;
before(async () => {
  serve = await Serve.start();
  // The README's app: "type": "module", the package installed under
  // node_modules (here a link to this folder, built).
  app = tempDir("readme-app");
  writeFileSync(join(app, "package.json"), JSON.stringify({ name: "my-worker", version: "1.0.0", type: "module" }));
  mkdirSync(join(app, "node_modules", "@skillstream"), { recursive: true });
  symlinkSync(pkg, join(app, "node_modules", "@skillstream", "client"), "dir");
});
after(async () => {
  await serve?.stop();
  if (app) removeTree(app);
});

test("README: the worker app shows the catalog and loads the first skill, as its command line runs it", async () => {
  const [worker] = blocks("js");
  assert.ok(worker, "the README shows no worker");
  writeFileSync(join(app, "worker.js"), worker);
  const line = blocks("sh").flatMap((b) => b.split("\n")).find((l) => l.includes("node worker.js"));
  assert.match(line ?? "", /^SKILLSTREAM_URL=nats:\/\/127\.0\.0\.1:4222 node worker\.js \S+$/);
  const { stdout } = await run(process.execPath, ["worker.js", serve.cwd], {
    cwd: app,
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
  // No server: an exit status and one line, not an unhandled rejection.
  const failed = await run(process.execPath, ["worker.js", serve.cwd], {
    cwd: app,
    env: { ...process.env, SKILLSTREAM_URL: "nats://127.0.0.1:1" },
    timeout: 60_000,
  }).then(
    () => undefined,
    (err: { code?: number; stderr?: string }) => err,
  );
  assert.equal(failed?.code, 1);
  assert.match(failed?.stderr ?? "", /^worker: /);
});

test("README: CommonJS requires the package and runs as its code shows", async () => {
  const [, cjs] = blocks("js");
  assert.ok(cjs, "the README shows no CommonJS code");
  writeFileSync(join(app, "worker.cjs"), cjs);
  const { stdout } = await run(process.execPath, ["worker.cjs"], {
    cwd: app,
    env: { ...process.env, SKILLSTREAM_URL: serve.url },
    timeout: 60_000,
  });
  assert.equal(stdout, "the skill tool, to register with the model\n");
});
