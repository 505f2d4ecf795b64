// A checker for the subset of JSON Schema (draft 2020-12) the protocol's
// schemas use: type, properties, required, items, const, enum, oneOf,
// allOf, $ref, pattern, minLength, maxLength, minimum. The client checks
// every trigger it sends and every answer it accepts against the schemas
// (src/gen/wire.ts holds them), so the types it exports and the checks it
// makes come from the same files.
import { schemas } from "./gen/wire.js";

type Schema = { [k: string]: unknown };

/** A problem found in a payload: the path of the field and what is wrong. */
export interface Problem {
  field: string;
  problem: string;
}

/**
 * How strict a check is. Triggers are checked strictly; answers leniently:
 * enumerations and constants other than "v" are not enforced, so that a
 * newer processor's new outcome or reason does not make an answer
 * unreadable.
 */
export type Strictness = "strict" | "lenient";

function resolve(ref: string, file: string): { node: Schema; file: string } {
  const [target, pointer] = ref.split("#");
  const f = target || file;
  let node = schemas[f] as Schema | undefined;
  for (const part of (pointer ?? "").split("/").filter(Boolean)) {
    node = node?.[part] as Schema | undefined;
  }
  if (!node) throw new Error(`schema ${file}: unresolvable $ref ${ref}`);
  return { node, file: f };
}

function join(parent: string, key: string): string {
  if (key.startsWith("[")) return parent + key;
  return parent ? `${parent}.${key}` : key;
}

function typeOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v === "number") return Number.isInteger(v) ? "integer" : "number";
  return typeof v;
}

function check(s: Schema, file: string, v: unknown, path: string, mode: Strictness): Problem | null {
  if (typeof s.$ref === "string") {
    const r = resolve(s.$ref, file);
    const p = check(r.node, r.file, v, path, mode);
    if (p) return p;
  }
  if (Array.isArray(s.allOf)) {
    for (const part of s.allOf as Schema[]) {
      const p = check(part, file, v, path, mode);
      if (p) return p;
    }
  }
  if (Array.isArray(s.oneOf)) {
    const parts = s.oneOf as Schema[];
    const fits = parts.filter((part) => check(part, file, v, path, mode) === null).length;
    if (fits !== 1) {
      const first = parts.map((part) => check(part, file, v, path, mode)).find((p) => p !== null);
      return first ?? { field: path, problem: "matches more than one form" };
    }
  }
  const enforce = mode === "strict" || path === "v";
  if ("const" in s && enforce && v !== s.const) {
    return { field: path, problem: `must be ${JSON.stringify(s.const)}, got ${JSON.stringify(v)}` };
  }
  if (Array.isArray(s.enum) && mode === "strict" && !s.enum.includes(v)) {
    return { field: path, problem: `must be one of ${s.enum.map((e) => JSON.stringify(e)).join(", ")}` };
  }
  const t = typeOf(v);
  if (typeof s.type === "string") {
    const want = s.type;
    if (!(t === want || (want === "number" && t === "integer"))) {
      return { field: path, problem: `wrong type: got ${t}, want ${want}` };
    }
  }
  if (t === "string") {
    const str = v as string;
    if (typeof s.minLength === "number" && [...str].length < s.minLength) {
      return { field: path, problem: str === "" ? "missing (empty)" : `shorter than ${s.minLength} characters` };
    }
    if (typeof s.maxLength === "number" && [...str].length > s.maxLength) {
      return { field: path, problem: `longer than ${s.maxLength} characters` };
    }
    if (typeof s.pattern === "string" && !new RegExp(s.pattern, "u").test(str)) {
      return { field: path, problem: `does not match ${s.pattern}` };
    }
  }
  if ((t === "integer" || t === "number") && typeof s.minimum === "number" && (v as number) < s.minimum) {
    return { field: path, problem: `below the minimum ${s.minimum}` };
  }
  if (t === "integer" && !Number.isSafeInteger(v)) {
    return { field: path, problem: "integer beyond 2^53" };
  }
  if (t === "array" && s.items) {
    const items = v as unknown[];
    for (let i = 0; i < items.length; i++) {
      const p = check(s.items as Schema, file, items[i], join(path, `[${i}]`), mode);
      if (p) return p;
    }
  }
  if (t === "object") {
    const obj = v as Record<string, unknown>;
    for (const k of (s.required as string[] | undefined) ?? []) {
      if (!(k in obj) || obj[k] === undefined) return { field: join(path, k), problem: "missing" };
    }
    const props = (s.properties as Record<string, Schema> | undefined) ?? {};
    for (const [k, ps] of Object.entries(props)) {
      if (obj[k] === undefined) continue;
      const p = check(ps, file, obj[k], join(path, k), mode);
      if (p) return p;
    }
  }
  return null;
}

/**
 * Checks v against the schema in file (e.g. "prestep.json") and returns
 * the first problem, or null when it conforms.
 */
export function checkPayload(file: string, v: unknown, mode: Strictness): Problem | null {
  const s = schemas[file] as Schema | undefined;
  if (!s) throw new Error(`no schema ${file}`);
  return check(s, file, v, "", mode);
}
