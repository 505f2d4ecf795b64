// Test helpers: a real skillstream serve (built with go build from this
// repository, on a free port, with its embedded NATS server and temporary
// data, skills and project folders) and the Go worker client beside it.
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync, chmodSync, readdirSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { connect as natsConnect, type NatsConnection } from "@nats-io/transport-node";

const run = promisify(execFile);

/** The repository root: the folder holding go.mod above this package. */
export function repoRoot(): string {
  let d = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(d, "go.mod"))) {
    const up = dirname(d);
    if (up === d) throw new Error("no go.mod above the test");
    d = up;
  }
  return d;
}

/** A temporary folder, removed (read-only parts included) by the returned cleanup. */
export function tempDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `skillstream-ts-${name}-`));
}

export function removeTree(root: string): void {
  const unlock = (p: string): void => {
    try {
      chmodSync(p, 0o755);
      for (const e of readdirSync(p)) {
        const q = join(p, e);
        if (statSync(q).isDirectory()) unlock(q);
      }
    } catch {
      // gone already
    }
  };
  unlock(root);
  rmSync(root, { recursive: true, force: true });
}

let built: Promise<{ serve: string; goclient: string }> | undefined;

/** Builds skillstream and the Go helper client once per test process. */
export function buildBinaries(): Promise<{ serve: string; goclient: string }> {
  built ??= (async () => {
    const prebuilt = process.env.SKILLSTREAM_TS_TEST_BIN; // scripts/test.mjs builds them once for every file
    if (prebuilt) return { serve: join(prebuilt, "skillstream"), goclient: join(prebuilt, "goclient") };
    const out = tempDir("bin");
    process.once("exit", () => rmSync(out, { recursive: true, force: true }));
    const root = repoRoot();
    const serve = join(out, "skillstream");
    const goclient = join(out, "goclient");
    await run("go", ["build", "-o", serve, "./cmd/skillstream"], { cwd: root });
    await run("go", ["build", "-o", goclient, "./events/client/typescript/goclient"], { cwd: root });
    return { serve, goclient };
  })();
  return built;
}

export function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = createServer();
    s.once("error", rej);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => (typeof a === "object" && a ? res(a.port) : rej(new Error("no port"))));
    });
  });
}

/** Polls f until it returns without throwing, or throws its last error after ms. */
export async function poll<T>(what: string, f: () => Promise<T>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      return await f();
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`${what}: still failing after ${ms} ms: ${String(last)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A skill folder's SKILL.md. */
export function writeSkill(root: string, name: string, description: string, body = "Do the thing.\n"): void {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "SKILL.md"), `---\nname: ${name}\ndescription: ${description}\n---\n\n${body}`);
}

/** A running skillstream serve and its folders. */
export class Serve {
  readonly url: string;
  readonly data: string;
  readonly skills: string;
  /** A project folder (with .git) holding one project skill, a-skill. */
  readonly cwd: string;
  #proc: ChildProcess | undefined;
  #exited: Promise<void> = Promise.resolve();
  stderr = "";

  private constructor(
    readonly bin: { serve: string; goclient: string },
    readonly port: number,
    readonly root: string,
    readonly extraArgs: string[],
  ) {
    this.url = `nats://127.0.0.1:${port}`;
    this.data = join(root, "data");
    this.skills = join(root, "skills");
    this.cwd = join(root, "project");
    mkdirSync(this.skills, { recursive: true });
    mkdirSync(join(this.cwd, ".git"), { recursive: true });
    writeSkill(join(this.cwd, ".agents", "skills"), "a-skill", "A skill for tests.");
  }

  /** Builds (once) and starts serve; it is stopped by stop(). */
  static async start(extraArgs: string[] = []): Promise<Serve> {
    const bin = await buildBinaries();
    const s = new Serve(bin, await freePort(), tempDir("serve"), extraArgs);
    await s.restart();
    return s;
  }

  /** Starts the serve process (again, on the same port and data) and waits until it answers. */
  async restart(): Promise<void> {
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("SKILLSTREAM_")) env[k] = v;
    env.HOME = this.root;
    const args = [
      "serve",
      "--listen", `127.0.0.1:${this.port}`,
      "--data", this.data,
      "--no-bundled",
      "--user-skills-dir", "",
      "--skills-dir", this.skills,
      "--log-level", "warn",
      "--ack-wait", "2s",
      ...this.extraArgs,
    ];
    const p = spawn(this.bin.serve, args, { env, stdio: ["ignore", "ignore", "pipe"] });
    p.stderr?.on("data", (b: Buffer) => {
      this.stderr += b.toString();
    });
    this.#proc = p;
    this.#exited = new Promise((r) => p.once("exit", () => r()));
    await poll("serve answers tool definition requests", async () => {
      if (p.exitCode !== null) throw new Error(`serve exited ${p.exitCode}: ${this.stderr}`);
      const nc = await natsConnect({ servers: this.url, reconnect: false, timeout: 1000 });
      try {
        await nc.request("skillstream.tool.definition", new Uint8Array(0), { timeout: 1000 });
      } finally {
        await nc.close();
      }
    });
  }

  /** Kills serve with signal and waits for it to exit. */
  async kill(signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
    this.#proc?.kill(signal);
    await this.#exited;
  }

  async stop(): Promise<void> {
    await this.kill("SIGTERM");
    removeTree(this.root);
  }

  /** A plain NATS connection to serve's server. */
  conn(): Promise<NatsConnection> {
    return natsConnect({ servers: this.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
  }

  /** Runs the skillstream binary with args (e.g. skills push) against this serve. */
  async cli(...args: string[]): Promise<string> {
    const { stdout } = await run(this.bin.serve, [...args, "--nats-url", this.url], { env: { ...process.env, HOME: this.root } });
    return stdout;
  }

  /** Runs requests through the Go client; one parsed reply per request. */
  async goClient(encoding: "msgpack" | "json", requests: { op: string; payload: unknown }[]): Promise<GoReply[]> {
    const input = requests.map((r) => JSON.stringify(r)).join("\n") + "\n";
    const out = await new Promise<string>((res, rej) => {
      const p = execFile(this.bin.goclient, ["-url", this.url, "-encoding", encoding, "run"], (err, stdout, stderr) =>
        err ? rej(new Error(`goclient: ${err.message}: ${stderr}`)) : res(stdout),
      );
      p.stdin?.end(input);
    });
    return out
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as GoReply);
  }
}

export interface GoReply {
  answer?: Record<string, unknown>;
  seq?: number;
  error?: string;
}

export const here = resolve(dirname(fileURLToPath(import.meta.url)));

/** A stored event of a session. */
export interface Stored {
  seq: number;
  subject: string;
  header: (k: string) => string;
  data: Uint8Array;
}

/** Every stored event of session sid, in order (a test scan; workers never need it). */
export async function sessionLog(nc: NatsConnection, sid: string, prefix = "ev"): Promise<Stored[]> {
  const { jetstreamManager } = await import("@nats-io/jetstream");
  const jsm = await jetstreamManager(nc);
  const out: Stored[] = [];
  let seq = 1;
  for (;;) {
    const m = await jsm.direct.getMessage("SESSIONS", { seq, next_by_subj: `${prefix}.${sid}.>` });
    if (!m) return out;
    out.push({ seq: m.seq, subject: m.subject, header: (k) => m.header.get(k), data: m.data });
    seq = m.seq + 1;
  }
}
