import { decode as mpDecode, encode as mpEncode } from "@msgpack/msgpack";

/** The payload encodings: msgpack (the default) or JSON. */
export type Encoding = "msgpack" | "json";

/** The largest payload the protocol allows, in bytes. */
export const MAX_PAYLOAD_SIZE = 1 << 20;

export const CONTENT_TYPE_MSGPACK = "application/msgpack";
export const CONTENT_TYPE_JSON = "application/json";

export function contentType(enc: Encoding): string {
  return enc === "json" ? CONTENT_TYPE_JSON : CONTENT_TYPE_MSGPACK;
}

/** The encoding a Content-Type names; absent means msgpack. */
export function encodingOf(ct: string | undefined): Encoding | undefined {
  const base = (ct ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  if (base === "" || base === CONTENT_TYPE_MSGPACK) return "msgpack";
  if (base === CONTENT_TYPE_JSON) return "json";
  return undefined;
}

export function encode(enc: Encoding, v: unknown): Uint8Array {
  if (enc === "json") return new TextEncoder().encode(JSON.stringify(v));
  return mpEncode(v, { ignoreUndefined: true });
}

/**
 * Decodes a payload. Errors (undecodable bytes, more than MAX_PAYLOAD_SIZE)
 * are thrown as plain Errors saying why; the caller wraps them.
 */
export function decode(enc: Encoding, b: Uint8Array): unknown {
  if (b.length > MAX_PAYLOAD_SIZE) {
    throw new Error(`payload of ${b.length} bytes, over the limit of ${MAX_PAYLOAD_SIZE}`);
  }
  if (enc === "json") return JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(b));
  // Declared lengths are bounded by the bytes present.
  return mpDecode(b, {
    maxStrLength: b.length,
    maxBinLength: b.length,
    maxArrayLength: b.length,
    maxMapLength: b.length,
    maxExtLength: b.length,
  });
}
