import { randomBytes } from "node:crypto";
import { posix } from "node:path";
import {
  connect as natsConnect,
  createInbox,
  headers as natsHeaders,
  ClosedConnectionError,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type NodeConnectionOptions,
  type Subscription,
} from "@nats-io/transport-node";
import { jetstream, jetstreamManager, JetStreamApiError, type DirectStreamAPI, type JetStreamClient } from "@nats-io/jetstream";

import { contentType, decode, encode, encodingOf, type Encoding, MAX_PAYLOAD_SIZE } from "./codec.js";
import {
  BadPayloadError,
  ClosedError,
  ExpiredError,
  MaterializeError,
  UntrustedSkillError,
  RejectedError,
  TimeoutError,
  TooLargeError,
  UnavailableError,
} from "./errors.js";
import type { Compaction, Decision, PreStep, SkillCall, SkillSearch, ToolDefinition, ToolDefinitions, ToolResult } from "./gen/wire.js";
import { materializeFromStore } from "./materialize.js";
import { untrustedReason, validPublicKey, type SkillSignature } from "./signature.js";
import { DEFAULT_OBJECTS, resourcePath } from "./storeformat.js";
import { checkPayload, type Problem } from "./schema.js";
import { parseStoreToken, validStoreEpoch, type StoreToken } from "./storetoken.js";

/** One entry of an agent's tool view. */
export type Tool = PreStep["tools"][number];

/** A pre-step as a worker gives it: `v` is filled in. */
export type PreStepInput = Omit<PreStep, "v"> & { v?: 1 };
/** A skill call as a worker gives it: `v` is filled in. */
export type SkillCallInput = Omit<SkillCall, "v"> & { v?: 1 };
/** A compaction as a worker gives it: `v` is filled in. */
export type CompactionInput = Omit<Compaction, "v"> & { v?: 1 };
/**
 * A call of the skill_search tool as a worker gives it: `v` is filled in,
 * and `args` are the model's arguments as it gave them (the tool judges
 * them: see searchSkills).
 */
export type SkillSearchInput = Omit<SkillSearch, "v" | "args"> & {
  v?: 1;
  args: { query?: unknown; limit?: unknown; offset?: unknown; [other: string]: unknown };
};

/** The value of a skill call's result: the skill as loaded. */
export type SkillValue = Extract<NonNullable<ToolResult["value"]>, { name: string }>;
/**
 * The value of a search's result: the query as searched (trimmed), the
 * offset asked for, how many skills match in all, and the matches shown
 * (name and description as in a catalog, not escaped), best first.
 */
export type SearchValue = Extract<NonNullable<ToolResult["value"]>, { query: string }>;

/**
 * Writes the files of the store skill `result` carries (`result.value.name`,
 * `result.value.digest`) into `dir`, the directory this client computed for
 * it, before the result is handed to the model. It must be atomic (the
 * directory appears complete or not at all) and idempotent (a directory
 * already holding that digest is left as it is).
 */
export type Materializer = (result: ToolResult, dir: string) => Promise<void>;

/** Defaults of the options. */
export const DEFAULT_PREFIX = "ev";
export const DEFAULT_RETRY_INTERVAL_MS = 2000;
export const DEFAULT_MAX_PENDING = 4096;
export const DEFAULT_SKILL_OBJECTS = DEFAULT_OBJECTS;
export const DEFAULT_INBOX_PREFIX = "_INBOX";
/** The subject a processor answers tool definition requests on. */
export const TOOL_DEFINITION_SUBJECT = "skillstream.tool.definition";
/** The subject a processor answers requests for every tool it serves on. */
export const TOOL_DEFINITIONS_SUBJECT = "skillstream.tool.definitions";
/** The name of the skill search tool. */
export const SKILL_SEARCH_TOOL = "skill_search";
/** The provider name of skills served by the skill store. */
export const STORE_PROVIDER = "store";
/** The provider name of a multi-tenant deployment's shared library skills. */
export const LIBRARY_PROVIDER = "library";
/** The shared library's object store unless libraryObjects names another. */
export const DEFAULT_LIBRARY_OBJECTS = "LIBRARY";

/**
 * How session subjects are laid out (serve --session-layout). "flat", the
 * default: a session id is one token and its events live on
 * <prefix>.<session>.<kind>. "owner": a session id is two tokens joined by
 * a dot, "<owner>.<sid>", and its events live on
 * <prefix>.<owner>.<sid>.<kind>, so that NATS permissions can bind
 * sessions to their owners.
 */
export type Layout = "flat" | "owner";

/** Options of a client. Every other key is a NATS connection option, passed through. */
export interface ClientOptions extends NodeConnectionOptions {
  /** Use this open connection instead of opening one; close() leaves it open. */
  connection?: NatsConnection;
  /** The session stream's subject prefix (default "ev"). */
  prefix?: string;
  /**
   * The session layout (default "flat"); "owner" for processors run with
   * --session-layout owner: session ids are then "<owner>.<sid>".
   */
  layout?: Layout;
  /** Payload encoding of triggers and answers (default msgpack). */
  encoding?: Encoding;
  /** How long a request waits for its answer before it publishes its trigger again (default 2000). */
  retryIntervalMs?: number;
  /** How many times one request publishes its trigger at most; 0 (the default): until its timeout or signal. */
  maxAttempts?: number;
  /** Bound on trigger publications awaiting their JetStream acknowledgement (default 4096); more wait for room. */
  maxPending?: number;
  /** The skill store's object store the default materializer reads, with direct gets on its stream OBJ_<name> only (default "SKILLS"). */
  skillObjects?: string;
  /**
   * The shared library's object store (a multi-tenant deployment), from
   * which the default materializer reads a library skill's files (provider
   * "library"; default "LIBRARY").
   */
  libraryObjects?: string;
  /** Replaces the default materializer (fetch by digest from the object store, verify, write atomically). */
  materialize?: Materializer;
  /**
   * Publishers' public keys ("N...", as `skillstream skills keygen` prints
   * them): when set, a store skill's files are written only if its result
   * carries a signature by one of them that verifies over the skill's
   * scope, name, digest and summary digest; otherwise the call throws an
   * UntrustedSkillError (a MaterializeError) and writes nothing.
   */
  trustedKeys?: string[];
  /**
   * The subject prefix of this client's reply inbox (default "_INBOX", or
   * the connection's inboxPrefix). Processors answer only on prefixes they
   * are configured for; NATS permissions can give each worker its own.
   */
  inboxPrefix?: string;
  /**
   * The skill store every pre-step, skill call and search asks for at least (see
   * requireStore), as `skills push` prints it: "<epoch>:<revision>" (its
   * --json output's "token"), or a revision alone.
   */
  storeToken?: string;
  /** The least skill store revision every pre-step, skill call and search asks for (see requireStoreRevision). */
  minStoreRevision?: number;
  [TEST_HOOKS]?: TestHooks;
}

/**
 * Tests only: a hook asked about every message of the reply inbox before it
 * is routed; true loses it, as a network would. Not part of the API.
 */
export const TEST_HOOKS = Symbol.for("skillstream.client.testHooks");
export interface TestHooks {
  dropAnswer?: (m: Msg) => boolean;
  /** Every trigger's id instead of a random one, so that a test can take an attempt's Msg-Id first. */
  triggerID?: string;
}

/** Options of one request. */
export interface CallOptions {
  /** Gives up after this many milliseconds (TimeoutError); also the trigger's deadlineMs unless it has one. */
  timeoutMs?: number;
  /** Gives up when aborted (TimeoutError with the abort reason as cause). */
  signal?: AbortSignal;
  /** Headers added to every publication of the trigger (e.g. tracing). */
  headers?: Record<string, string>;
  /** Called with the attempt's number each time the trigger is published. */
  onAttempt?: (attempt: number) => void;
}

/** Counters of a client. */
export interface ClientStats {
  /** Messages on the reply inbox that answered no waiting request (stale, foreign, malformed or forged). */
  droppedAnswers: number;
}

/** The tool view entry that shows a processor with tool owner id `owner` its skill tool. */
export function skillTool(owner = "skillstream"): Tool {
  return { name: "skill", owner };
}

/**
 * The tool view entry that shows a processor with tool owner id `owner` its
 * skill_search tool. A processor serving search offers it to a session
 * whose view holds both skillTool(owner) and skillSearchTool(owner): its
 * catalog may then list fewer skills and say that skill_search finds the rest.
 */
export function skillSearchTool(owner = "skillstream"): Tool {
  return { name: SKILL_SEARCH_TOOL, owner };
}

/** The typed value of a search's result (matches, or none); undefined for any other result. */
export function searchValue(r: ToolResult): SearchValue | undefined {
  const v = r.value;
  return v !== undefined && typeof v.query === "string" ? (v as SearchValue) : undefined;
}

/** The message of a search's argument error, as the protocol writes it. */
const SEARCH_ARGS_PREFIX = "invalid search arguments: ";

/**
 * Whether r answers a skill search whose arguments the tool refused (code
 * bad_request, message "invalid search arguments: <what is wrong>"): a
 * result for the model, recorded like any other, unlike the bad_request of
 * a malformed trigger.
 */
export function isSearchArgsError(r: ToolResult): boolean {
  return r.isError && r.error?.code === "bad_request" && typeof r.error.message === "string" && r.error.message.startsWith(SEARCH_ARGS_PREFIX);
}

/**
 * Whether r is a store skill (of the skill store, or of a multi-tenant
 * deployment's shared library) whose files belong in a resource directory
 * on this host.
 */
export function isStoreSkill(r: ToolResult): boolean {
  const v = r.value;
  return (
    !r.isError &&
    v !== undefined &&
    (v.provider === STORE_PROVIDER || v.provider === LIBRARY_PROVIDER) &&
    !!v.digest &&
    v.resourceBase?.kind === "directory" &&
    !!v.resourceBase.path
  );
}

/**
 * The instructions in a skill tool success text (a <skill_content>
 * document): what lies between its first "<skill_instructions>\n" and its
 * final "\n</skill_instructions>\n</skill_content>"; "" when the text is
 * not such a document.
 */
export function instructionsOf(text: string): string {
  const open = "<skill_instructions>\n";
  const close = "\n</skill_instructions>\n</skill_content>";
  const i = text.indexOf(open);
  if (i < 0) return "";
  const rest = text.slice(i + open.length);
  return rest.endsWith(close) ? rest.slice(0, rest.length - close.length) : "";
}

/**
 * A skill.invocation (or a Decision's invocation) with value.content
 * filled in from its text when it leaves the copy out, as records do now
 * (records written before carry the instructions in both): either form
 * reads the same. One that carries value.content is returned as it is.
 */
export function withContent<T extends { text: string; value: { content?: string } }>(inv: T): T {
  if (inv.value.content) return inv;
  return { ...inv, value: { ...inv.value, content: instructionsOf(inv.text) } };
}

function checkTokens(s: string): string | null {
  for (const tok of s.split(".")) {
    if (tok === "") return "empty token";
    if (tok === "*" || tok === ">") return "wildcard token";
    if (/\s/.test(tok)) return "whitespace";
  }
  return null;
}

function checkTokensOrThrow(what: string, s: string): void {
  const why = typeof s === "string" ? checkTokens(s) : "not a string";
  if (why) throw new BadPayloadError(what, `${JSON.stringify(String(s).slice(0, 80))}: ${why}`, "invalid option or subject");
}

const SESSION = /^[A-Za-z0-9_-]{1,128}$/;
const OWNER_SESSION = /^[A-Za-z0-9_-]{1,128}\.[A-Za-z0-9_-]{1,128}$/;

/** What is wrong with sid as a session id of layout, or null. */
function sessionProblem(layout: Layout, sid: unknown): string | null {
  if (typeof sid !== "string") return "not a string";
  if (layout === "owner") {
    if (OWNER_SESSION.test(sid)) return null;
    if (SESSION.test(sid)) return "a one-token (flat layout) id: the owner layout wants <owner>.<session>";
    return "invalid session id (want <owner>.<session>: two tokens of 1 to 128 of A-Z a-z 0-9 _ - joined by a dot)";
  }
  if (SESSION.test(sid)) return null;
  if (OWNER_SESSION.test(sid)) {
    return "invalid session token (want 1 to 128 of A-Z a-z 0-9 _ -; an <owner>.<session> id needs the layout option \"owner\")";
  }
  return "invalid session token (want 1 to 128 of A-Z a-z 0-9 _ -)";
}

/** Checks what the schema cannot say: ids in bytes, resourceDir clean and absolute. */
function extraChecks(p: Record<string, unknown>, idField: "step" | "call" | null): Problem | null {
  if (idField) {
    const id = String(p[idField]);
    if (Buffer.byteLength(id) > 256) return { field: idField, problem: `too long: ${Buffer.byteLength(id)} bytes, limit 256` };
  }
  const dir = p.resourceDir;
  if (typeof dir === "string" && dir !== "") {
    if (Buffer.byteLength(dir) > 1024) return { field: "resourceDir", problem: "too long" };
    if (!dir.startsWith("/")) return { field: "resourceDir", problem: "not an absolute path" };
    if (posix.normalize(dir) !== dir || (dir.length > 1 && dir.endsWith("/"))) {
      return { field: "resourceDir", problem: 'not a clean path (no ".", "..", "//" or trailing "/")' };
    }
    // eslint-disable-next-line no-control-regex
    if (/[\u0000-\u001f\u007f-\u009f]/u.test(dir)) return { field: "resourceDir", problem: "control character" };
  }
  return null;
}

/** A request waiting for its answer. */
interface Waiting {
  sid: string;
  idField: "step" | "call";
  id: string;
  /** Stream sequences of this request's attempts, from their publish acknowledgements. */
  seqs: Set<number>;
  /** Acknowledgements still outstanding. */
  acking: number;
  /** Well-formed answers for this request whose trigger's sequence is not known yet. */
  held: { answer: Record<string, unknown>; enc: Encoding }[];
  resolve: (a: { answer: Record<string, unknown>; enc: Encoding }) => void;
}

function isTransient(err: unknown): boolean {
  return !(err instanceof JetStreamApiError && err.code !== 503) && !(err instanceof ClosedConnectionError);
}

/**
 * An agent worker's side of the skillstream protocol. Safe for many
 * sessions and requests at once, all answered through one inbox
 * subscription.
 */
export class Client {
  readonly prefix: string;
  readonly layout: Layout;
  readonly encoding: Encoding;
  readonly retryIntervalMs: number;
  readonly maxAttempts: number;
  readonly maxPending: number;
  readonly skillObjects: string;
  readonly libraryObjects: string;
  readonly inboxPrefix: string;

  readonly #nc: NatsConnection;
  readonly #js: JetStreamClient;
  readonly #ownsConn: boolean;
  readonly #materialize: Materializer;
  #trusted: string[] | undefined;
  readonly #hooks: TestHooks;
  readonly #base: string;
  readonly #sub: Subscription;
  readonly #waiting = new Map<number, Waiting>();
  readonly #closers = new Set<(err: Error) => void>();
  readonly #materializing = new Map<string, Promise<void>>();
  #direct: Promise<DirectStreamAPI> | undefined;
  /** The store every trigger asks for at least (requireStore); undefined: none. */
  #minStore: StoreToken | undefined;
  #next = 0;
  #closed = false;
  #dropped = 0;
  #pending = 0;
  readonly #room: (() => void)[] = [];

  /** Use connect(); the constructor takes an open connection. */
  constructor(nc: NatsConnection, opts: ClientOptions = {}, ownsConn = false) {
    this.prefix = opts.prefix ?? DEFAULT_PREFIX;
    checkTokensOrThrow("prefix", this.prefix);
    this.layout = opts.layout ?? "flat";
    if (this.layout !== "flat" && this.layout !== "owner") {
      throw new BadPayloadError("layout", `unknown session layout ${JSON.stringify(this.layout)}: want "flat" or "owner"`, "invalid option");
    }
    this.encoding = opts.encoding ?? "msgpack";
    if (this.encoding !== "msgpack" && this.encoding !== "json") {
      throw new BadPayloadError("encoding", `unknown encoding ${JSON.stringify(this.encoding)}`, "invalid option");
    }
    this.retryIntervalMs = opts.retryIntervalMs ?? DEFAULT_RETRY_INTERVAL_MS;
    if (!(this.retryIntervalMs > 0)) throw new BadPayloadError("retryIntervalMs", "want a positive number", "invalid option");
    this.maxAttempts = opts.maxAttempts ?? 0;
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 0) {
      throw new BadPayloadError("maxAttempts", "want a non-negative integer", "invalid option");
    }
    this.maxPending = opts.maxPending ?? DEFAULT_MAX_PENDING;
    if (!Number.isInteger(this.maxPending) || this.maxPending < 1) {
      throw new BadPayloadError("maxPending", "want an integer of at least 1", "invalid option");
    }
    this.skillObjects = opts.skillObjects ?? DEFAULT_SKILL_OBJECTS;
    if (!this.skillObjects) throw new BadPayloadError("skillObjects", "empty object store name", "invalid option");
    this.libraryObjects = opts.libraryObjects ?? DEFAULT_LIBRARY_OBJECTS;
    if (!this.libraryObjects) throw new BadPayloadError("libraryObjects", "empty object store name", "invalid option");
    this.inboxPrefix = opts.inboxPrefix ??
      (opts.connection as unknown as { options?: { inboxPrefix?: string } } | undefined)?.options?.inboxPrefix ??
      DEFAULT_INBOX_PREFIX;
    checkTokensOrThrow("inboxPrefix", this.inboxPrefix);
    if (this.inboxPrefix.startsWith("$") || this.inboxPrefix === this.prefix || this.inboxPrefix.startsWith(this.prefix + ".")) {
      throw new BadPayloadError("inboxPrefix", "must not be a $ subject or under the session stream's prefix", "invalid option");
    }
    if (opts.minStoreRevision !== undefined) {
      if (!Number.isSafeInteger(opts.minStoreRevision) || opts.minStoreRevision < 0) {
        throw new BadPayloadError("minStoreRevision", "want a non-negative integer", "invalid option");
      }
      this.requireStoreRevision(opts.minStoreRevision);
    }
    if (opts.storeToken !== undefined) {
      let tok: StoreToken;
      try {
        tok = parseStoreToken(String(opts.storeToken));
      } catch (err) {
        throw new BadPayloadError("storeToken", (err as Error).message, "invalid option");
      }
      this.requireStore(tok);
    }
    this.#nc = nc;
    this.#ownsConn = ownsConn;
    this.#js = jetstream(nc);
    this.#hooks = opts[TEST_HOOKS] ?? {};
    this.#materialize = opts.materialize ?? ((r, dir) => this.#storeMaterializer(r, dir));
    if (opts.trustedKeys !== undefined) {
      for (const k of opts.trustedKeys) {
        if (typeof k !== "string" || !validPublicKey(k)) {
          throw new BadPayloadError("trustedKeys", "want skill signing public keys (N..., from skills keygen)", "invalid option");
        }
      }
      this.#trusted = [...opts.trustedKeys];
    }
    this.#base = createInbox(this.inboxPrefix) + ".";
    this.#sub = nc.subscribe(this.#base + "*", { callback: (err, m) => (err ? undefined : this.#route(m)) });
  }

  /** The NATS connection. */
  get connection(): NatsConnection {
    return this.#nc;
  }

  /** Counters: answers dropped by verification. */
  stats(): ClientStats {
    return { droppedAnswers: this.#dropped };
  }

  /**
   * Sets the skill store later pre-steps, skill calls and searches ask for at least:
   * the token's revision (minStoreRevision) of the buckets of its epoch
   * (minStoreEpoch), as `skills push` printed them (a string is parsed with
   * parseStoreToken). A processor whose view of the store is older catches
   * up first; if it cannot within the trigger's deadline, the pre-step and
   * the call throw UnavailableError, never decided on the older view. A
   * processor whose store's buckets are of another epoch (recreated since
   * the push) answers so at once, in the same way: push again and require
   * the new token. Within one epoch the floor only rises; a token with an
   * epoch replaces a floor of another epoch, or of none (revisions of two
   * epochs do not compare), and a token without an epoch raises the
   * revision and keeps the floor's epoch. A request's own minStoreEpoch
   * wins over the floor's; its minStoreRevision may be higher.
   */
  requireStore(token: StoreToken | string): void {
    const tok = typeof token === "string" ? parseStoreToken(token) : token;
    if (tok.epoch !== "" && !validStoreEpoch(tok.epoch)) throw new TypeError(`not a store epoch: ${JSON.stringify(tok.epoch)}`);
    if (!Number.isSafeInteger(tok.revision) || tok.revision < 0) throw new TypeError(`not a store revision: ${tok.revision}`);
    const cur = this.#minStore;
    if (cur && (tok.epoch === "" || tok.epoch === cur.epoch)) {
      if (tok.revision > cur.revision) this.#minStore = { epoch: cur.epoch, revision: tok.revision };
      return;
    }
    this.#minStore = { epoch: tok.epoch, revision: tok.revision };
  }

  /**
   * Raises the least skill store revision later pre-steps, skill calls and searches
   * ask for to rev, of the epoch required already if any. Prefer
   * requireStore with the epoch `skills push` prints beside the revision.
   */
  requireStoreRevision(rev: number): void {
    this.requireStore({ epoch: "", revision: rev });
  }

  /** The least skill store the client's triggers ask for; revision 0 and epoch "" when none. */
  storeFloor(): StoreToken {
    return { ...(this.#minStore ?? { epoch: "", revision: 0 }) };
  }

  /**
   * Ends the client: requests waiting for an answer fail with ClosedError.
   * The connection is closed only when connect() opened it.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const c of [...this.#closers]) c(new ClosedError());
    this.#sub.unsubscribe();
    if (this.#ownsConn) await this.#nc.close();
  }

  /**
   * Appends a pre-step to its session's log (v and deadlineMs filled in)
   * and returns the processor's Decision. Decisions that are not a normal
   * outcome throw, with the decision attached: rejected → RejectedError,
   * expired → ExpiredError, code unavailable → UnavailableError, code
   * too_large → TooLargeError. With userText and a processor that has user
   * invocation on, d.invocations are the skills the user invoked (/name),
   * to show after the catalog in that order, and d.ignored the names that
   * invoked nothing; store skills among them are materialised first when
   * the pre-step named resourceDir (a failure throws MaterializeError).
   */
  async preStep(ps: PreStepInput, opts: CallOptions = {}): Promise<Decision> {
    const payload = this.#trigger(ps, opts, "prestep.json", "step", "pre-step");
    const { answer } = await this.#request("agent.pre-step", payload.session, "step", String(payload.step), payload, opts);
    const d = answer as Decision;
    const code = d.error?.code;
    const msg = d.error?.message ?? "";
    const where = `pre-step ${d.session}/${d.step}`;
    if (d.outcome === "rejected") throw new RejectedError(code ?? "", msg, d);
    if (d.outcome === "expired") throw new ExpiredError(`${where}: trigger expired`, d);
    if (code === "unavailable") throw new UnavailableError(`${where}: skillstream unavailable: ${msg}`, d);
    if (code === "too_large") throw new TooLargeError(`${where}: answer too large: ${msg}`, d);
    // The instructions travel once, in each invocation's text: the value
    // gets its copy back here, whichever form the processor sent.
    if (d.invocations) d.invocations = d.invocations.map(withContent);
    // Store skills the user invoked (/name) are materialised as a skill
    // call's are, before the worker shows their text to the model.
    if (typeof payload.resourceDir === "string" && payload.resourceDir !== "") {
      for (const inv of d.invocations ?? []) {
        const r: ToolResult = {
          v: 1, session: d.session, call: String(inv.id), triggerSeq: d.triggerSeq, isError: false, text: inv.text, value: inv.value,
        } as ToolResult;
        if (isStoreSkill(r)) await this.#materializeResult(payload.resourceDir, r);
      }
    }
    return d;
  }

  /**
   * Appends a skill call to its session's log (v and deadlineMs filled in)
   * and returns the processor's ToolResult. Errors the model should see
   * (invalid_name, unknown, not_model_invocable, provider, too_large) are
   * results with isError: hand r.text to the model. bad_request throws
   * RejectedError, expired ExpiredError, unavailable UnavailableError. A
   * store skill of a call with resourceDir is materialised first, at
   * `<resourceDir>/<name>/<first 16 hex of digest>`; a failure throws
   * MaterializeError.
   */
  async callSkill(sc: SkillCallInput, opts: CallOptions = {}): Promise<ToolResult> {
    const payload = this.#trigger(sc, opts, "skillcall.json", "call", "skill call");
    const { answer } = await this.#request("tool.call.skill", payload.session, "call", String(payload.call), payload, opts);
    const r = answer as ToolResult;
    throwResultError("skill call", r);
    if (typeof payload.resourceDir === "string" && payload.resourceDir !== "" && isStoreSkill(r)) {
      await this.#materializeResult(payload.resourceDir, r);
    }
    return r;
  }

  /**
   * Appends a call of the skill_search tool to its session's log (v,
   * deadlineMs and the store floor filled in as for callSkill) and returns
   * the processor's ToolResult, sent, retried and verified as callSkill's
   * is: a retry of the same call id is answered with the result already
   * appended. Pass `args` as the model gave them, leaving out those it left
   * out: the tool judges them, and invalid ones (a missing or empty query,
   * a limit of 99) are answered with a result for the model, isError set
   * and text "Error: invalid search arguments: <what is wrong>"
   * (isSearchArgsError), not thrown. No match is a result too. Hand r.text
   * to the model; searchValue(r) is the typed value (query, offset, total,
   * results). Throws as callSkill: RejectedError for a malformed search
   * or one sent to a processor that does not serve search, ExpiredError,
   * UnavailableError.
   */
  async searchSkills(ss: SkillSearchInput, opts: CallOptions = {}): Promise<ToolResult> {
    if (ss === null || typeof ss !== "object") throw new BadPayloadError("", "not an object", "skill search");
    const given = ss.args as unknown;
    if (given === null || typeof given !== "object" || Array.isArray(given)) {
      throw new BadPayloadError("args", "not an object (the model's arguments)", "skill search");
    }
    // Only the arguments the tool takes are sent, as they are: the
    // processor judges them, in the words the model is to read.
    const args: Record<string, unknown> = {};
    for (const k of ["query", "limit", "offset"] as const) {
      const v = (given as Record<string, unknown>)[k];
      if (v !== undefined && v !== null) args[k] = v;
    }
    const payload = this.#trigger({ ...ss, args: {} }, opts, "skillsearch.json", "call", "skill search");
    payload.args = args;
    const { answer } = await this.#request("tool.call.skill_search", payload.session, "call", String(payload.call), payload, opts);
    const r = answer as ToolResult;
    if (!isSearchArgsError(r)) throwResultError("skill search", r);
    return r;
  }

  /**
   * Appends a context.compact event and returns its stream sequence. It
   * has no answer: the JetStream acknowledgement confirms it. Keep
   * catalogKeep(decision) in `keep` to keep the catalog visible: the
   * Decision's catalogSeq, or every record of catalogSeqs when the list
   * the model sees is a full catalog and change lists after it.
   */
  async compact(cp: CompactionInput, opts: Pick<CallOptions, "headers" | "timeoutMs"> = {}): Promise<number> {
    const payload = { ...cp, v: cp.v ?? 1 } as Record<string, unknown>;
    const p = this.#sessionCheck(payload) ?? checkPayload("compaction.json", payload, "strict");
    if (p) throw new BadPayloadError(p.field, p.problem, "compaction");
    return this.append(String(payload.session), "context.compact", payload, opts);
  }

  /**
   * Appends value, encoded in the client's encoding, as an event of kind
   * to session sid's log and returns its stream sequence. Use it for the
   * session's other events (messages, other tools' calls and results): the
   * processor ignores kinds it does not know. A trigger kind appended this
   * way gets no answer.
   */
  async append(sid: string, kind: string, value: unknown, opts: Pick<CallOptions, "headers" | "timeoutMs"> = {}): Promise<number> {
    const why = sessionProblem(this.layout, sid);
    if (why) throw new BadPayloadError("session", why, "append");
    checkTokensOrThrow("kind", kind);
    if (this.#closed) throw new ClosedError();
    const data = this.#encodeChecked(value);
    const h = this.#headers(opts.headers);
    try {
      const ack = await this.#js.publish(`${this.prefix}.${sid}.${kind}`, data, {
        headers: h,
        ...(opts.timeoutMs ? { timeout: opts.timeoutMs } : {}),
      });
      return ack.seq;
    } catch (err) {
      if (this.#closed) throw new ClosedError();
      throw err;
    }
  }

  /**
   * Asks a processor for the skill tool's definition (name, description,
   * JSON Schema of its parameters) to register with the model.
   */
  async toolDefinition(opts: Pick<CallOptions, "timeoutMs"> = {}): Promise<ToolDefinition> {
    if (this.#closed) throw new ClosedError();
    const h = natsHeaders();
    h.set("Content-Type", contentType(this.encoding));
    const m = await this.#nc.request(TOOL_DEFINITION_SUBJECT, new Uint8Array(0), { timeout: opts.timeoutMs ?? 5000, headers: h });
    const enc = encodingOf(m.headers?.get("Content-Type")) ?? "json";
    let v: unknown;
    try {
      v = decode(enc, m.data);
    } catch (err) {
      throw new BadPayloadError("", `undecodable: ${(err as Error).message}`, "tool definition");
    }
    const p = checkPayload("tooldefinition.json", v, "lenient");
    if (p) throw new BadPayloadError(p.field, p.problem, "tool definition");
    return v as ToolDefinition;
  }

  /**
   * Asks a processor for every tool it serves (name, description, JSON
   * Schema of its parameters), in the order to register them with the
   * model: the skill tool, and skill_search when it serves search.
   */
  async toolDefinitions(opts: Pick<CallOptions, "timeoutMs"> = {}): Promise<ToolDefinitions> {
    if (this.#closed) throw new ClosedError();
    const h = natsHeaders();
    h.set("Content-Type", contentType(this.encoding));
    const m = await this.#nc.request(TOOL_DEFINITIONS_SUBJECT, new Uint8Array(0), { timeout: opts.timeoutMs ?? 5000, headers: h });
    const enc = encodingOf(m.headers?.get("Content-Type")) ?? "json";
    let v: unknown;
    try {
      v = decode(enc, m.data);
    } catch (err) {
      throw new BadPayloadError("", `undecodable: ${(err as Error).message}`, "tool definitions");
    }
    const p = checkPayload("tooldefinitions.json", v, "lenient");
    if (p) throw new BadPayloadError(p.field, p.problem, "tool definitions");
    return v as ToolDefinitions;
  }

  // The request machinery.

  #trigger<T extends { v?: 1; deadlineMs?: number }>(
    input: T,
    opts: CallOptions,
    schema: string,
    idField: "step" | "call",
    what: string,
  ): Record<string, unknown> & { session: string } {
    if (input === null || typeof input !== "object") throw new BadPayloadError("", "not an object", what);
    const payload: Record<string, unknown> = { ...input, v: input.v ?? 1 };
    this.#addStoreFloor(payload);
    if (payload.deadlineMs === undefined && opts.timeoutMs !== undefined) {
      payload.deadlineMs = Math.ceil(Date.now() + opts.timeoutMs);
    }
    const p = this.#sessionCheck(payload) ?? checkPayload(schema, payload, "strict") ?? extraChecks(payload, idField);
    if (p) throw new BadPayloadError(p.field, p.problem, what);
    return payload as Record<string, unknown> & { session: string };
  }

  /**
   * The session of a payload checked in the client's layout (the schema
   * admits either layout's ids); one that is not a string is the schema's
   * to report.
   */
  #sessionCheck(payload: Record<string, unknown>): Problem | null {
    if (typeof payload.session !== "string" || payload.session === "") return null;
    const why = sessionProblem(this.layout, payload.session);
    return why ? { field: "session", problem: why } : null;
  }

  /**
   * Adds the store floor (requireStore) to a trigger: its own epoch wins;
   * within one epoch (or without one) the higher revision.
   */
  #addStoreFloor(payload: Record<string, unknown>): void {
    const floor = this.#minStore;
    if (!floor) return;
    const epoch = typeof payload.minStoreEpoch === "string" ? payload.minStoreEpoch : "";
    const rev = typeof payload.minStoreRevision === "number" ? payload.minStoreRevision : 0;
    if (epoch !== "" && floor.epoch !== "" && epoch !== floor.epoch) return;
    if (epoch === "" && floor.epoch !== "") payload.minStoreEpoch = floor.epoch;
    const want = Math.max(rev, floor.revision);
    if (want > 0) payload.minStoreRevision = want;
  }

  #encodeChecked(v: unknown): Uint8Array {
    const data = encode(this.encoding, v);
    if (data.length > MAX_PAYLOAD_SIZE) {
      throw new BadPayloadError("", `payload of ${data.length} bytes, over the limit of ${MAX_PAYLOAD_SIZE}`, "encode");
    }
    return data;
  }

  #headers(extra: Record<string, string> | undefined): MsgHdrs {
    const h = natsHeaders();
    for (const [k, v] of Object.entries(extra ?? {})) h.append(k, v);
    h.set("Content-Type", contentType(this.encoding));
    return h;
  }

  async #acquire(): Promise<void> {
    while (this.#pending >= this.maxPending) await new Promise<void>((r) => this.#room.push(r));
    this.#pending++;
  }

  #release(): void {
    this.#pending--;
    this.#room.shift()?.();
  }

  async #request(
    kind: string,
    sid: string,
    idField: "step" | "call",
    id: string,
    payload: unknown,
    opts: CallOptions,
  ): Promise<{ answer: Record<string, unknown>; enc: Encoding }> {
    if (this.#closed) throw new ClosedError();
    const data = this.#encodeChecked(payload);
    const subject = `${this.prefix}.${sid}.${kind}`;
    const token = ++this.#next;
    const inbox = this.#base + token;
    // Each attempt is its own message, "<trigger id>-<attempt>", so that the
    // stream's duplicate window does not swallow a retry. The trigger id is
    // 128 random bits drawn for this request, the same on its retries, and
    // nothing else: JetStream tells any publisher the stream's last Msg-Id,
    // so no Msg-Id may carry a session or step, and no other worker can
    // predict one and take it first. Exactly once does not rest on it: the
    // processor takes every attempt as the same trigger (same session and
    // step or call in the payload) and answers with what it appended.
    const msgID = `${this.#hooks.triggerID ?? randomBytes(16).toString("hex")}-`;
    let attempt = 0;
    let finished = false;
    let timer: NodeJS.Timeout | undefined;
    let deadlineTimer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    let closer: ((err: Error) => void) | undefined;
    let fail: (err: Error) => void = () => {};
    let retry: () => void = () => {};

    const done = new Promise<{ answer: Record<string, unknown>; enc: Encoding }>((resolve, reject) => {
      fail = reject;
      this.#waiting.set(token, { sid, idField, id, seqs: new Set(), acking: 0, held: [], resolve });
    });
    void done.catch(() => {});
    const w = this.#waiting.get(token)!;

    const publish = async (n: number): Promise<void> => {
      let taken = false;
      const h = this.#headers(opts.headers);
      h.set("Reply-Inbox", inbox);
      h.set("Nats-Msg-Id", msgID + n);
      await this.#acquire();
      if (finished) {
        this.#release(); // answered while this attempt waited for room
        return;
      }
      w.acking++;
      try {
        const ack = await this.#js.publish(subject, data, { headers: h, timeout: Math.max(this.retryIntervalMs, 5000) });
        // A duplicate is not this publication: another message took its
        // Msg-Id first (not an earlier attempt, each has its own), and the
        // sequence is that message's. Publish again now, under a new id.
        if (ack.duplicate) taken = true;
        else w.seqs.add(ack.seq);
      } catch (err) {
        if (!isTransient(err)) {
          fail(this.#closed || err instanceof ClosedConnectionError ? new ClosedError() : (err as Error));
        }
      } finally {
        w.acking--;
        this.#release();
        this.#settleHeld(w);
      }
      // (Unless a later attempt is out already: its own ack tells.)
      if (taken && !finished && n === attempt) {
        clearTimeout(timer);
        retry();
      }
    };

    try {
      if (opts.signal?.aborted) {
        throw new TimeoutError(`${kind} ${sid}/${id}: no answer before the signal (not sent)`, 0, { cause: opts.signal.reason });
      }
      if (opts.signal) {
        onAbort = () => fail(new TimeoutError(`${kind} ${sid}/${id}: no answer after ${attempt} attempt(s): aborted`, attempt, { cause: opts.signal?.reason }));
        opts.signal.addEventListener("abort", onAbort, { once: true });
      }
      if (opts.timeoutMs !== undefined) {
        deadlineTimer = setTimeout(
          () => fail(new TimeoutError(`${kind} ${sid}/${id}: no answer after ${attempt} attempt(s) within ${opts.timeoutMs} ms`, attempt)),
          Math.max(0, opts.timeoutMs),
        );
      }
      closer = (err) => fail(err);
      this.#closers.add(closer);
      retry = () => {
        if (this.maxAttempts > 0 && attempt >= this.maxAttempts) {
          fail(new TimeoutError(`${kind} ${sid}/${id}: no answer after ${attempt} attempt(s) of ${this.retryIntervalMs} ms`, attempt));
          return;
        }
        attempt++;
        opts.onAttempt?.(attempt);
        void publish(attempt);
        timer = setTimeout(retry, this.retryIntervalMs);
      };
      retry();
      return await done;
    } finally {
      finished = true;
      clearTimeout(timer);
      clearTimeout(deadlineTimer);
      if (onAbort) opts.signal?.removeEventListener("abort", onAbort);
      if (closer) this.#closers.delete(closer);
      this.#forget(token);
    }
  }

  #forget(token: number): void {
    const w = this.#waiting.get(token);
    if (!w) return;
    this.#waiting.delete(token);
    this.#dropped += w.held.length;
    w.held = [];
  }

  /** Accepts held answers whose trigger is now known; drops them when no acknowledgement is outstanding. */
  #settleHeld(w: Waiting): void {
    const held = w.held;
    w.held = [];
    const i = held.findIndex((h) => w.seqs.has(h.answer.triggerSeq as number));
    if (i >= 0) {
      this.#dropped += held.length - 1;
      w.resolve(held[i]!);
      return;
    }
    if (w.acking > 0) w.held = held;
    else this.#dropped += held.length;
  }

  /**
   * Routes a message of the reply inbox to its request. An answer is
   * accepted only when it is a well-formed answer of the request's kind
   * naming its session and step or call, and its triggerSeq is the stream
   * sequence of one of the request's attempts. Anything else is dropped
   * and counted.
   */
  #route(m: Msg): void {
    if (this.#hooks.dropAnswer?.(m)) return;
    const tail = m.subject.slice(this.#base.length);
    const w = /^[1-9][0-9]{0,15}$/.test(tail) ? this.#waiting.get(Number(tail)) : undefined;
    const enc = encodingOf(m.headers?.get("Content-Type"));
    if (!w || !enc || !m.subject.startsWith(this.#base)) {
      this.#dropped++;
      return;
    }
    let answer: unknown;
    try {
      answer = decode(enc, m.data);
    } catch {
      this.#dropped++;
      return;
    }
    const schema = w.idField === "step" ? "decision.json" : "toolresult.json";
    if (checkPayload(schema, answer, "lenient") !== null) {
      this.#dropped++;
      return;
    }
    const a = answer as Record<string, unknown>;
    if (a.session !== w.sid || a[w.idField] !== w.id) {
      this.#dropped++;
      return;
    }
    if (w.seqs.has(a.triggerSeq as number)) {
      w.resolve({ answer: a, enc });
      return;
    }
    if (w.acking > 0 && w.held.length < 16) {
      w.held.push({ answer: a, enc });
      return;
    }
    this.#dropped++;
  }

  // Store skills.

  /**
   * The direct get API the default materializer reads the object store
   * with. checkAPI false: creating it asks the server nothing (a worker
   * may make no JetStream request but the object stream's direct gets).
   */
  #directAPI(): Promise<DirectStreamAPI> {
    if (!this.#direct) {
      this.#direct = jetstreamManager(this.#nc, { checkAPI: false }).then((jsm) => jsm.direct);
      this.#direct.catch(() => (this.#direct = undefined));
    }
    return this.#direct;
  }

  #storeMaterializer(r: ToolResult, dir: string): Promise<void> {
    const bucket = r.value!.provider === LIBRARY_PROVIDER ? this.libraryObjects : this.skillObjects;
    return materializeFromStore(() => this.#directAPI(), bucket, r.value!.digest!, dir);
  }

  async #materializeResult(resourceDir: string, r: ToolResult): Promise<void> {
    const v = r.value as SkillValue;
    let dir: string;
    try {
      dir = resourcePath(resourceDir, v.name, v.digest!);
    } catch (err) {
      throw new MaterializeError(`materialize skill files: ${(err as Error).message}`, r, { cause: err });
    }
    if (v.resourceBase?.path !== dir) {
      throw new MaterializeError(
        `materialize skill files: the answer names resource directory ${JSON.stringify(v.resourceBase?.path?.slice(0, 200))}, not ${dir}`,
        r,
      );
    }
    if (this.#trusted) {
      const why = untrustedReason(v.name, v.digest!, v.signature as SkillSignature | undefined, this.#trusted);
      if (why !== undefined) {
        throw new UntrustedSkillError(`materialize skill files: skill ${JSON.stringify(v.name)} not written: ${why}`, r);
      }
    }
    const key = `${dir}\0${v.digest}`;
    let p = this.#materializing.get(key);
    if (!p) {
      // Done once per digest and directory; the memory of it is bounded
      // (a forgotten one is found on disk again by the materializer).
      if (this.#materializing.size >= 4096) this.#materializing.clear();
      p = this.#materialize(r, dir);
      this.#materializing.set(key, p);
      p.catch(() => this.#materializing.delete(key));
    }
    try {
      await p;
    } catch (err) {
      throw new MaterializeError(`materialize skill files: skill ${JSON.stringify(v.name)} into ${dir}: ${(err as Error).message}`, r, {
        cause: err,
      });
    }
  }
}

/**
 * Throws the error a tool result amounts to (bad_request RejectedError,
 * expired ExpiredError, unavailable UnavailableError); other results are
 * for the model.
 */
function throwResultError(what: string, r: ToolResult): void {
  if (!r.isError || !r.error) return;
  const where = `${what} ${r.session}/${r.call}`;
  switch (r.error.code) {
    case "bad_request":
      throw new RejectedError(r.error.code, r.error.message, undefined, r);
    case "expired":
      throw new ExpiredError(`${where}: trigger expired`, undefined, r);
    case "unavailable":
      throw new UnavailableError(`${where}: skillstream unavailable: ${r.error.message}`, undefined, r);
  }
}

/**
 * Returns a client. With `connection`, on that open connection (close()
 * leaves it open); otherwise it connects with the remaining options
 * (servers, credentials, TLS, token, user/pass... as nats.js takes them)
 * and close() closes the connection.
 */
export async function connect(opts: ClientOptions = {}): Promise<Client> {
  if (opts.connection) return new Client(opts.connection, opts, false);
  const {
    prefix: _p,
    encoding: _e,
    retryIntervalMs: _r,
    maxAttempts: _m,
    maxPending: _mp,
    skillObjects: _s,
    libraryObjects: _lo,
    materialize: _mat,
    trustedKeys: _tk,
    connection: _c,
    storeToken: _st,
    minStoreRevision: _msr,
    ...natsOpts
  } = opts;
  const nc = await natsConnect({ name: "skillstream worker", maxReconnectAttempts: -1, ...natsOpts });
  try {
    return new Client(nc, opts, true);
  } catch (err) {
    await nc.close();
    throw err;
  }
}

/**
 * What a compaction keeps (`keep`) to keep the catalog the model sees
 * after decision d: every record of its list when the list is made of
 * several (d.catalogSeqs: a full catalog and the change lists after it,
 * whose whole list is d.currentList), else the one catalog (d.catalogSeq);
 * empty when none is visible. Keeping fewer makes the next pre-step send
 * the whole list again.
 */
export function catalogKeep(d: Decision): number[] {
  if (d.catalogSeqs && d.catalogSeqs.length > 0) return [...d.catalogSeqs];
  return d.catalogSeq ? [d.catalogSeq] : [];
}
