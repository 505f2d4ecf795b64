// Test helpers: a real skillstream serve (built with go build from this
// repository, on a free port, with its embedded NATS server and temporary
// data, skills and project folders, or connected to a NATS server started
// from a configuration file) and the Go worker client beside it.
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

/**
 * A NATS server started from a configuration file (its accounts, users and
 * permissions) by the Go helper (goclient natsd), on a free loopback port
 * with a temporary JetStream store.
 */
export class NatsServer {
  private constructor(
    readonly url: string,
    readonly root: string,
    private readonly proc: ChildProcess,
    private readonly exited: Promise<void>,
  ) {}

  static async start(config: string): Promise<NatsServer> {
    const bin = await buildBinaries();
    const root = tempDir("nats");
    const file = join(root, "nats-server.conf");
    writeFileSync(file, config);
    const p = spawn(bin.goclient, ["natsd", "-config", file, "-store", join(root, "jetstream")], { stdio: ["pipe", "pipe", "pipe"] });
    const exited = new Promise<void>((r) => p.once("exit", () => r()));
    let stderr = "";
    p.stderr?.on("data", (b: Buffer) => (stderr += b.toString()));
    try {
      const url = await new Promise<string>((res, rej) => {
        let out = "";
        p.stdout?.on("data", (b: Buffer) => {
          out += b.toString();
          const nl = out.indexOf("\n");
          if (nl >= 0) res((JSON.parse(out.slice(0, nl)) as { url: string }).url);
        });
        void exited.then(() => rej(new Error(`natsd exited: ${stderr}`)));
      });
      return new NatsServer(url, root, p, exited);
    } catch (err) {
      p.kill("SIGKILL");
      removeTree(root);
      throw err;
    }
  }

  /** Stops the server (its input closed) and removes its store. */
  async stop(): Promise<void> {
    this.proc.stdin?.end();
    await this.exited;
    removeTree(this.root);
  }
}

/** A NATS user's name and password. */
export interface NatsUser {
  user: string;
  pass: string;
}

/** serve on a NATS server of its own instead of its embedded one. */
export interface ExternalNats {
  url: string;
  /** The user serve connects as (--nats-user). */
  serve: NatsUser;
  /** The user of the readiness check, conn() and cli(): one without restrictions (an operator). */
  admin: NatsUser;
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
    readonly nats?: ExternalNats,
  ) {
    this.url = nats?.url ?? `nats://127.0.0.1:${port}`;
    this.data = join(root, "data");
    this.skills = join(root, "skills");
    this.cwd = join(root, "project");
    mkdirSync(this.skills, { recursive: true });
    mkdirSync(join(this.cwd, ".git"), { recursive: true });
    writeSkill(join(this.cwd, ".agents", "skills"), "a-skill", "A skill for tests.");
  }

  /** Builds (once) and starts serve; it is stopped by stop(). With nats, on that server instead of an embedded one. */
  static async start(extraArgs: string[] = [], nats?: ExternalNats): Promise<Serve> {
    const bin = await buildBinaries();
    const s = new Serve(bin, await freePort(), tempDir("serve"), extraArgs, nats);
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
      ...this.#natsArgs(this.nats?.serve),
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
      const nc = await natsConnect({ servers: this.url, reconnect: false, timeout: 1000, ...this.#admin() });
      try {
        await nc.request("skillstream.tool.definition", new Uint8Array(0), { timeout: 1000 });
      } finally {
        await nc.close();
      }
    });
  }

  /** serve's flags naming its NATS server: the embedded one, or the external one as user. */
  #natsArgs(user: NatsUser | undefined): string[] {
    if (!this.nats) return ["--listen", `127.0.0.1:${this.port}`, "--data", this.data];
    return ["--nats-url", this.nats.url, ...(user ? ["--nats-user", user.user, "--nats-password", user.pass] : [])];
  }

  /** The connection options of the admin user, if any. */
  #admin(): { user?: string; pass?: string } {
    return this.nats ? { user: this.nats.admin.user, pass: this.nats.admin.pass } : {};
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
    return natsConnect({ servers: this.url, maxReconnectAttempts: -1, reconnectTimeWait: 100, ...this.#admin() });
  }

  /** Runs the skillstream binary with args (e.g. skills push) against this serve. */
  async cli(...args: string[]): Promise<string> {
    const nats = this.nats ? this.#natsArgs(this.nats.admin) : ["--nats-url", this.url];
    const { stdout } = await run(this.bin.serve, [...args, ...nats], { env: { ...process.env, HOME: this.root } });
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
