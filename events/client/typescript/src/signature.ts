// Signed store skills: the statement a publisher signs (as the Go package
// events/skillstore writes it) and its verification against the keys a
// worker trusts, with the official @nats-io/nkeys (ed25519). Pure: no I/O,
// no NATS.
import { fromPublic } from "@nats-io/nkeys";

import { indexKey, validDigest } from "./storeformat.js";

/** The format and version the statement names, and the one algorithm. */
export const STATEMENT_FORMAT = "skillstream-skill";
export const STATEMENT_VERSION = 1;
export const SIGNATURE_ALG = "ed25519-nkey";

/** A store skill's signature as a skill result's value carries it. */
export interface SkillSignature {
  key: string;
  alg: string;
  sig: string;
  scope: string;
  summary: string;
}

const PUBLIC_KEY = /^N[A-Z2-7]{55}$/;

/** Whether key is a publisher's public key (an nkey of the server role, "N...", as skills keygen prints it). */
export function validPublicKey(key: string): boolean {
  if (!PUBLIC_KEY.test(key)) return false;
  try {
    fromPublic(key);
    return true;
  } catch {
    return false;
  }
}

/**
 * The bytes a revision's signature covers: the format and version, the
 * skill's index key (scope and name), the digest of its files and the
 * digest of its summary, one per line.
 */
export function statement(scope: string, name: string, digest: string, summary: string): Uint8Array {
  const text = `${STATEMENT_FORMAT}/v${STATEMENT_VERSION}\nkey ${indexKey(scope, name)}\ndigest ${digest}\nsummary ${summary}\n`;
  return new TextEncoder().encode(text);
}

/**
 * Why the skill (name, digest) with signature sig is not trusted by keys,
 * or undefined when sig verifies over its statement by one of them.
 */
export function untrustedReason(name: string, digest: string, sig: SkillSignature | undefined, keys: readonly string[]): string | undefined {
  if (!sig) return "revision not signed";
  if (sig.alg !== SIGNATURE_ALG) return `signature does not verify: algorithm ${JSON.stringify(String(sig.alg).slice(0, 64))}`;
  if (typeof sig.key !== "string" || !validPublicKey(sig.key)) return "signature does not verify: not a skill signing key";
  if (typeof sig.summary !== "string" || !validDigest(sig.summary) || !validDigest(digest)) {
    return "signature does not verify: malformed digest";
  }
  const raw = typeof sig.sig === "string" && sig.sig.length <= 128 ? Buffer.from(sig.sig, "base64") : Buffer.alloc(0);
  if (raw.length !== 64 || raw.toString("base64") !== sig.sig) return "signature does not verify: not 64 bytes of base64";
  let data: Uint8Array;
  try {
    data = statement(String(sig.scope), name, digest, sig.summary);
  } catch (err) {
    return `signature does not verify: ${(err as Error).message}`;
  }
  let ok = false;
  try {
    ok = fromPublic(sig.key).verify(data, new Uint8Array(raw));
  } catch {
    ok = false;
  }
  if (!ok) return `signature does not verify: by ${sig.key} over ${indexKeyOr(sig.scope, name)}`;
  if (!keys.includes(sig.key)) return `signed by a key that is not trusted: ${sig.key}`;
  return undefined;
}

function indexKeyOr(scope: string, name: string): string {
  try {
    return indexKey(scope, name);
  } catch {
    return name;
  }
}
