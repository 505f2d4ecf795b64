// The smallest skillstream worker in TypeScript: it tells the processor a
// model step is about to happen, prints the catalog the model is to be
// shown, and calls the skill tool for the first skill listed, as a model
// might. The repository's README shows its worker function;
// test/examples.test.ts runs it against a real serve.
//
//   SKILLSTREAM_URL=nats://127.0.0.1:4222 npm run worker -- [PROJECT_DIR]
//
// It connects to $SKILLSTREAM_URL, by default nats://127.0.0.1:4222, where
// `skillstream serve` listens; PROJECT_DIR is the session's working
// directory (default: the current one; npm runs scripts in this folder).
// Against a NATS server that names its workers (cmd/skillstream/deploy's
// files), set SKILLSTREAM_USER and SKILLSTREAM_PASSWORD: it connects as
// that user and takes its answers under _INBOX.<user>, the only inboxes
// those files let the user subscribe to.
import { randomUUID } from "node:crypto";
import { resolve } from "node:path";
import { parseArgs } from "node:util";

import { connect, skillTool } from "../src/index.js";

async function worker(url: string, dir: string, user?: string, pass?: string): Promise<void> {
  const c = await connect(user ? { servers: url, user, pass, inboxPrefix: `_INBOX.${user}` } : { servers: url });
  try {
    const session = randomUUID(); // session ids are secrets: random, 128 bits or more
    const tools = [{ name: "bash", owner: "my-agent" }, skillTool("skillstream")];
    // Before each model step: is there something new for the model to see?
    const d = await c.preStep({ session, step: "1", cwd: dir, tools }, { timeoutMs: 10_000 });
    console.log(`pre-step: ${d.outcome}`);
    // Files of the project that are not skills, and why: for the user who
    // edits them, never for the model.
    for (const dg of d.diagnostics ?? []) console.error(`skill file skipped: ${dg.path}: ${dg.reason}`);
    const name = d.catalog?.source.entries?.[0]?.name;
    if (d.catalog && name) {
      console.log(`catalog (a user message for the model):\n${d.catalog.text}`);
      // The model calls the skill tool; here, for the first skill listed.
      const r = await c.callSkill({ session, call: "call-1", cwd: dir, args: { name } }, { timeoutMs: 10_000 });
      // An unknown skill is not an exception: r.isError is set, r.text says why.
      console.log(`skill ${name} (the tool result for the model):\n${r.text}`);
    }
  } finally {
    await c.close();
  }
}

const usage = `usage: worker [PROJECT_DIR]

The smallest skillstream worker: one pre-step for a session in PROJECT_DIR
(default: the current directory), printing the catalog the model is to be
shown, then a skill call for the first skill listed, printing its result.
It connects to $SKILLSTREAM_URL (default nats://127.0.0.1:4222), where
skillstream serve listens; with SKILLSTREAM_USER and SKILLSTREAM_PASSWORD set,
as that user, taking its answers under _INBOX.<user>.
`;

let args: { values: { help?: boolean }; positionals: string[] } | undefined;
try {
  args = parseArgs({ options: { help: { type: "boolean", short: "h" } }, allowPositionals: true });
} catch (err) {
  process.stderr.write(`worker: ${err instanceof Error ? err.message : err}\n${usage}`);
  process.exitCode = 2;
}
if (args?.values.help) {
  process.stdout.write(usage); // and nothing else: no connection
} else if (args && args.positionals.length > 1) {
  process.stderr.write(usage);
  process.exitCode = 2;
} else if (args) {
  const url = process.env.SKILLSTREAM_URL ?? "nats://127.0.0.1:4222";
  const dir = resolve(args.positionals[0] ?? "."); // a trigger's cwd is absolute
  worker(url, dir, process.env.SKILLSTREAM_USER, process.env.SKILLSTREAM_PASSWORD).catch((err: unknown) => {
    console.error("worker:", err instanceof Error ? err.message : err);
    process.exitCode = 1;
  });
}
