// Builds the CommonJS copy of the package into dist/cjs, beside the ES
// modules tsc writes into dist/src, for apps that require() it. tsc
// decides a file's module kind from the package.json nearest to it, and
// this package's says "type": "module"; so the sources are copied into
// dist/cjs-src, under a package.json saying "commonjs", and compiled there
// with the same strict settings (types included), then the copy is
// removed. dist/cjs gets a package.json of its own saying "commonjs", so
// that Node loads its .js files as CommonJS. The dependencies
// (@nats-io/*, @msgpack/msgpack) ship CommonJS themselves, so the copy
// require()s them on every Node this package supports.
import { execFileSync } from "node:child_process";
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const src = join(pkg, "dist", "cjs-src");
const out = join(pkg, "dist", "cjs");
const commonjs = JSON.stringify({ type: "commonjs" }) + "\n";

rmSync(src, { recursive: true, force: true });
rmSync(out, { recursive: true, force: true });
cpSync(join(pkg, "src"), src, { recursive: true });
writeFileSync(join(src, "package.json"), commonjs);
try {
  const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
  execFileSync(process.execPath, [tsc, "-p", join(pkg, "tsconfig.cjs.json")], { cwd: pkg, stdio: "inherit" });
} finally {
  rmSync(src, { recursive: true, force: true });
}
mkdirSync(out, { recursive: true });
writeFileSync(join(out, "package.json"), commonjs);
