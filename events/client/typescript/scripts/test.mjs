// Runs the tests: builds skillstream and the Go helper client once into a
// temporary folder (the tests start that serve), then node's test runner
// over dist/test, one file at a time. Extra arguments go to node --test.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
const root = join(pkg, "..", "..", "..");
const bin = mkdtempSync(join(tmpdir(), "skillstream-ts-bin-"));
let status = 1;
try {
  execFileSync("go", ["build", "-o", join(bin, "skillstream"), "./cmd/skillstream"], { cwd: root, stdio: "inherit" });
  execFileSync("go", ["build", "-o", join(bin, "goclient"), "./events/client/typescript/goclient"], { cwd: root, stdio: "inherit" });
  const args = process.argv.slice(2);
  const files = readdirSync(join(pkg, "dist", "test"))
    .filter((f) => f.endsWith(".test.js"))
    .map((f) => join("dist", "test", f));
  const r = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...(args.length ? args : files)], {
    cwd: pkg,
    stdio: "inherit",
    env: { ...process.env, SKILLSTREAM_TS_TEST_BIN: bin },
  });
  status = r.status ?? 1;
} finally {
  rmSync(bin, { recursive: true, force: true });
}
process.exit(status);
