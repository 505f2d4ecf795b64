// The package is ES modules and CommonJS: an app of either kind loads it,
// gets the same exports, works against a real serve and, in TypeScript,
// compiles against its types; and what `npm pack` (and so a publish) takes
// holds both builds and the metadata the registry shows.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";

import { here, removeTree, Serve, tempDir } from "./helpers.js";

const run = promisify(execFile);
const pkg = join(here, "..", "..");
const tsc = join(pkg, "node_modules", "typescript", "bin", "tsc");

/** An app folder with package.json fields extra and the package installed (a link to this folder, built). */
function app(name: string, extra: Record<string, string>): string {
  const dir = tempDir(name);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ name, version: "1.0.0", ...extra }));
  mkdirSync(join(dir, "node_modules", "@skillstream"), { recursive: true });
  symlinkSync(pkg, join(dir, "node_modules", "@skillstream", "client"), "dir");
  return dir;
}

let serve: Serve;
let cjsApp: string;
let esmApp: string;
before(async () => {
  serve = await Serve.start();
  cjsApp = app("cjs-app", {}); // no "type": CommonJS
  esmApp = app("esm-app", { type: "module" });
});
after(async () => {
  await serve?.stop();
  for (const d of [cjsApp, esmApp]) if (d) removeTree(d);
});

test("dual: require() loads the CommonJS build and import the ES modules, with the same exports", async () => {
  writeFileSync(
    join(cjsApp, "exports.js"),
    `const m = require("@skillstream/client");
import("@skillstream/client").then((e) => {
  console.log(JSON.stringify({
    cjs: Object.keys(m).sort(), esm: Object.keys(e).sort(), resolved: require.resolve("@skillstream/client"),
    errors: new m.TimeoutError("t") instanceof m.SkillstreamError,
  }));
});
`,
  );
  const { stdout } = await run(process.execPath, ["exports.js"], { cwd: cjsApp, timeout: 60_000 });
  const got = JSON.parse(stdout) as { cjs: string[]; esm: string[]; resolved: string; errors: boolean };
  assert.ok(got.cjs.includes("connect") && got.cjs.includes("skillTool"), `require() exports ${got.cjs.join(", ")}`);
  assert.deepEqual(got.cjs, got.esm, "require() and import give different exports");
  assert.match(got.resolved, /[/\\]dist[/\\]cjs[/\\]index\.js$/);
  assert.equal(got.errors, true, "the CommonJS build's errors are not its own SkillstreamError");

  writeFileSync(join(esmApp, "resolve.js"), `console.log(import.meta.resolve("@skillstream/client"));\n`);
  const esm = await run(process.execPath, ["resolve.js"], { cwd: esmApp, timeout: 60_000 });
  assert.match(esm.stdout.trim(), /\/dist\/src\/index\.js$/);
});

// The README's worker, in CommonJS: a pre-step and a skill call through the
// CommonJS build (its codec, schema checks and NATS client) against serve.
const cjsWorker = `const { randomUUID } = require("node:crypto");
const { connect, skillTool } = require("@skillstream/client");

async function main() {
  const c = await connect({ servers: process.env.SKILLSTREAM_URL });
  try {
    const session = randomUUID();
    const tools = [skillTool("skillstream")];
    const d = await c.preStep({ session, step: "1", cwd: process.argv[2], tools }, { timeoutMs: 10_000 });
    console.log("pre-step: " + d.outcome);
    const name = d.catalog.source.entries[0].name;
    const r = await c.callSkill({ session, call: "call-1", cwd: process.argv[2], args: { name } }, { timeoutMs: 10_000 });
    console.log(r.text);
  } finally {
    await c.close();
  }
}

main().catch((err) => {
  console.error("worker:", err instanceof Error ? err.message : err);
  process.exitCode = 1;
});
`;

test("dual: a CommonJS app makes a pre-step and a skill call against a real serve", async () => {
  writeFileSync(join(cjsApp, "worker.js"), cjsWorker);
  const { stdout } = await run(process.execPath, ["worker.js", serve.cwd], {
    cwd: cjsApp,
    env: { ...process.env, SKILLSTREAM_URL: serve.url },
    timeout: 60_000,
  });
  assert.ok(stdout.startsWith("pre-step: appended\n"), stdout);
  assert.ok(stdout.includes('<skill_content name="a-skill">') && stdout.includes("Do the thing."), stdout);
});

test("dual: TypeScript apps compiled to CommonJS and to ES modules type-check against the package and run", async () => {
  const source = `import { connect, skillTool, type Decision } from "@skillstream/client";
const d: Decision | undefined = undefined;
const tool: { name: string } = skillTool("skillstream");
console.log(typeof connect, tool.name, d === undefined);
`;
  for (const [dir, emits] of [
    [cjsApp, 'require("@skillstream/client")'],
    [esmApp, 'from "@skillstream/client"'],
  ] as const) {
    writeFileSync(join(dir, "app.ts"), source);
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          moduleResolution: "NodeNext",
          target: "ES2022",
          strict: true,
          outDir: "out",
          typeRoots: [join(pkg, "node_modules", "@types")],
          types: ["node"],
        },
        files: ["app.ts"],
      }),
    );
    await run(process.execPath, [tsc, "-p", "tsconfig.json"], { cwd: dir, timeout: 120_000 }).catch(
      (err: { stdout?: string; stderr?: string }) => {
        assert.fail(`tsc in ${dir}:\n${err.stdout ?? ""}${err.stderr ?? ""}`);
      },
    );
    assert.ok(readFileSync(join(dir, "out", "app.js"), "utf8").includes(emits), `${dir}: the compiled app lacks ${emits}`);
    const { stdout } = await run(process.execPath, [join("out", "app.js")], { cwd: dir, timeout: 60_000 });
    assert.equal(stdout, "function skill true\n");
  }
});

test("dual: npm pack takes both builds, and package.json has what a publish shows", async () => {
  const meta = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as Record<string, unknown> & {
    repository?: { url?: string };
    engines?: { node?: string };
    keywords?: string[];
    exports?: Record<string, { import?: { types?: string; default?: string }; require?: { types?: string; default?: string } }>;
  };
  for (const k of ["name", "version", "description", "license", "repository", "files", "types", "engines", "keywords", "exports"]) {
    assert.ok(meta[k] !== undefined && meta[k] !== "", `package.json lacks ${k}`);
  }
  assert.match(meta.repository?.url ?? "", /github\.com\/skillstream\/skillstream/);
  assert.ok((meta.keywords ?? []).length > 0);
  const dot = meta.exports?.["."];
  const named = [dot?.import?.types, dot?.import?.default, dot?.require?.types, dot?.require?.default, meta.types as string, meta.main as string];
  assert.ok(named.every((p) => typeof p === "string"), `exports map: ${JSON.stringify(meta.exports)}`);

  // npm itself, as npm test runs it (npm_execpath), else the npm on PATH.
  const npm = process.env.npm_execpath ? [process.execPath, process.env.npm_execpath] : ["npm"];
  const { stdout } = await run(npm[0]!, [...npm.slice(1), "pack", "--dry-run", "--json", "--ignore-scripts"], {
    cwd: pkg,
    timeout: 120_000,
  });
  const [packed] = JSON.parse(stdout) as { files: { path: string }[] }[];
  const files = new Set((packed?.files ?? []).map((f) => f.path));
  for (const p of [...named.map((p) => p!.replace(/^\.\//, "")), "dist/cjs/package.json", "README.md", "package.json"]) {
    assert.ok(files.has(p), `npm pack leaves out ${p}: ${[...files].join(", ")}`);
  }
  const stray = [...files].filter((p) => /^dist\/(test|examples|bench|cjs-src)\//.test(p) || p.endsWith(".ts") && !p.endsWith(".d.ts"));
  assert.deepEqual(stray, [], "npm pack takes files that are not the package's");
});
