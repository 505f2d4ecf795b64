// Every package npm installs from the lockfile admits Node 20, the oldest
// Node this package supports (CI runs the tests on it): `npm ci` prints
// no EBADENGINE warning there.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";

import { here } from "./helpers.js";

const pkg = join(here, "..", "..");

/** Whether version (x.y.z) satisfies one comparator of an npm range. */
function satisfies(version: number[], comparator: string): boolean {
  const m = /^(>=|<=|>|<|=|\^|~)?\s*v?(\d+)(?:\.(\d+|x|\*))?(?:\.(\d+|x|\*))?$/.exec(comparator.trim());
  if (!m) throw new Error(`cannot read the engines range ${JSON.stringify(comparator)}`);
  const op = m[1] ?? "=";
  const want = [m[2], m[3], m[4]].map((p) => (p === undefined || p === "x" || p === "*" ? 0 : Number(p)));
  const cmp = version.map((v, i) => v - want[i]!).find((d) => d !== 0) ?? 0;
  switch (op) {
    case ">=":
      return cmp >= 0;
    case ">":
      return cmp > 0;
    case "<=":
      return cmp <= 0;
    case "<":
      return cmp < 0;
    case "^":
    case "~":
      return cmp >= 0 && version[0] === want[0];
    default: // "=" or a bare version: x-ranges match any minor or patch
      return version[0] === want[0] && (m[3] === undefined || m[3] === "x" || version[1] === want[1]);
  }
}

/** Whether version satisfies an npm range: alternatives joined by ||, each comparators joined by spaces. */
function admits(range: string, version: number[]): boolean {
  return range.split("||").some((alt) =>
    alt
      .trim()
      .replace(/(>=|<=|>|<|=|\^|~)\s+/g, "$1")
      .split(/\s+/)
      .every((c) => satisfies(version, c)),
  );
}

test("engines: every package of the lockfile admits Node 20.0.0", () => {
  for (const [range, v, want] of [
    [">= 22.x", [20, 0, 0], false],
    [">= 18.x", [20, 0, 0], true],
    [">=18.0.0", [20, 0, 0], true],
    ["^18 || ^20", [20, 0, 0], true],
    [">=20.11 <21", [20, 0, 0], false],
    ["20.x", [20, 5, 1], true],
  ] as const) {
    assert.equal(admits(range, [...v]), want, `the range reader: ${range} for ${v.join(".")}`);
  }
  const node20 = [20, 0, 0];
  const own = JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")) as { engines: { node: string } };
  assert.ok(admits(own.engines.node, node20), `package.json engines ${own.engines.node}`);
  const lock = JSON.parse(readFileSync(join(pkg, "package-lock.json"), "utf8")) as {
    packages: Record<string, { version?: string; engines?: { node?: string } | string[] }>;
  };
  const refused: string[] = [];
  for (const [path, p] of Object.entries(lock.packages)) {
    const range = Array.isArray(p.engines) ? undefined : p.engines?.node;
    if (range && !admits(range, node20)) refused.push(`${path}@${p.version}: node ${range}`);
  }
  assert.deepEqual(refused, [], "packages that would warn EBADENGINE on Node 20");
});
