import type { Decision, ToolResult } from "./gen/wire.js";

/** The base class of every error the client throws. */
export class SkillstreamError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * No answer came, in any attempt, before the request's timeout or signal
 * ended it, or before the last attempt (`maxAttempts`) timed out. `cause`
 * is the signal's reason when a signal ended it.
 */
export class TimeoutError extends SkillstreamError {
  constructor(
    message: string,
    /** How many times the trigger was published. */
    readonly attempts: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The client was closed before the answer came (or before the request). */
export class ClosedError extends SkillstreamError {
  constructor() {
    super("skillstream client closed");
  }
}

/**
 * The processor refused the trigger as malformed: a "rejected" decision,
 * or a tool result with code "bad_request". The answer is attached.
 */
export class RejectedError extends SkillstreamError {
  constructor(
    readonly code: string,
    readonly detail: string,
    /** The answer to a rejected pre-step. */
    readonly decision?: Decision,
    /** The answer to a rejected skill call. */
    readonly result?: ToolResult,
  ) {
    super(`trigger rejected: ${code}: ${detail}`);
  }
}

/**
 * The processor received the trigger after its deadline and appended
 * nothing (outcome or code "expired").
 */
export class ExpiredError extends SkillstreamError {
  constructor(
    message: string,
    readonly decision?: Decision,
    readonly result?: ToolResult,
  ) {
    super(message);
  }
}

/**
 * The processor gave up on the trigger (code "unavailable") and appended
 * nothing; trying again later is safe.
 */
export class UnavailableError extends SkillstreamError {
  constructor(
    message: string,
    readonly decision?: Decision,
    readonly result?: ToolResult,
  ) {
    super(message);
  }
}

/**
 * A catalog was appended but did not fit in the answer (code "too_large"):
 * the decision has no catalog; read the session's newest catalog.append.
 */
export class TooLargeError extends SkillstreamError {
  constructor(
    message: string,
    readonly decision: Decision,
  ) {
    super(message);
  }
}

/**
 * A store skill's files could not be put in its resource directory
 * (fetch, verification against the digest, writing, or a materialize hook
 * failed). Nothing is left half written. The result is attached.
 */
export class MaterializeError extends SkillstreamError {
  constructor(
    message: string,
    readonly result: ToolResult,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/**
 * A client with trustedKeys got a store skill unsigned, signed by another
 * key, or whose signature does not verify: its files were not written.
 */
export class UntrustedSkillError extends MaterializeError {}

/**
 * Invalid input, refused before anything was sent, or an answer that is
 * not a well-formed payload. `field` is the path of the field with the
 * wire's keys ("session", "tools[2].name"); `problem` says what is wrong.
 */
export class BadPayloadError extends SkillstreamError {
  constructor(
    readonly field: string,
    readonly problem: string,
    context = "bad payload",
  ) {
    super(`${context}: field "${field}": ${problem}`);
  }
}
