// Pre-step round trip, TypeScript client against Go client, in one run
// against one real serve (started here unless --url names one): n
// pre-steps of one session each, one at a time, after 10 to warm up;
// rounds alternate the clients. Not a test: it prints figures.
//
//   npm run bench -- [--n 500] [--rounds 2] [--encoding msgpack|json] [--url URL --cwd DIR]
import { execFile } from "node:child_process";
import { parseArgs, promisify } from "node:util";

import { connect, skillTool } from "../src/index.js";
import { buildBinaries, Serve } from "../test/helpers.js";

const { values } = parseArgs({
  options: {
    n: { type: "string", default: "500" },
    rounds: { type: "string", default: "2" },
    encoding: { type: "string", default: "msgpack" },
    url: { type: "string" },
    cwd: { type: "string" },
  },
});
const n = Number(values.n);
const encoding = values.encoding === "json" ? "json" : "msgpack";

const serve = values.url ? undefined : await Serve.start();
const url = values.url ?? serve!.url;
const cwd = values.cwd ?? serve!.cwd;
const { goclient } = await buildBinaries();

async function ts(session: string): Promise<{ p50Ms: number; p90Ms: number }> {
  const c = await connect({ servers: url, encoding });
  try {
    const tools = [{ name: "bash", owner: "bench" }, skillTool("skillstream")];
    const took: number[] = [];
    for (let i = 0; i < n + 10; i++) {
      const start = process.hrtime.bigint();
      await c.preStep({ session, step: String(i), cwd, tools }, { timeoutMs: 20_000 });
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      if (i >= 10) took.push(ms);
    }
    took.sort((a, b) => a - b);
    const q = (x: number) => took[Math.floor(x * (took.length - 1))]!;
    return { p50Ms: q(0.5), p90Ms: q(0.9) };
  } finally {
    await c.close();
  }
}

async function go(session: string): Promise<{ p50Ms: number; p90Ms: number }> {
  const { stdout } = await promisify(execFile)(goclient, [
    "-url", url, "-encoding", encoding, "bench", "-n", String(n), "-cwd", cwd, "-session", session,
  ]);
  return JSON.parse(stdout) as { p50Ms: number; p90Ms: number };
}

try {
  console.log(`pre-step round trip, ${n} sequential pre-steps of one session per client and round, ${encoding}, ${url}`);
  for (let round = 1; round <= Number(values.rounds); round++) {
    const t = await ts(`bench-ts-${Date.now()}-${round}`);
    const g = await go(`bench-go-${Date.now()}-${round}`);
    const f = (x: number) => x.toFixed(3);
    console.log(
      `round ${round}: TypeScript p50 ${f(t.p50Ms)} ms p90 ${f(t.p90Ms)} ms | Go p50 ${f(g.p50Ms)} ms p90 ${f(g.p90Ms)} ms | TS/Go p50 ${(t.p50Ms / g.p50Ms).toFixed(2)}×`,
    );
  }
} finally {
  await serve?.stop();
}
