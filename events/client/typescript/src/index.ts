// @skillstream/client: the skillstream worker client for TypeScript on
// Node. See the README's "TypeScript worker" section and
// events/protocol.md for the wire protocol it speaks.
export {
  Client,
  connect,
  isStoreSkill,
  skillTool,
  DEFAULT_INBOX_PREFIX,
  DEFAULT_MAX_PENDING,
  DEFAULT_PREFIX,
  DEFAULT_RETRY_INTERVAL_MS,
  DEFAULT_SKILL_OBJECTS,
  STORE_PROVIDER,
  TOOL_DEFINITION_SUBJECT,
  type CallOptions,
  type ClientOptions,
  type ClientStats,
  type CompactionInput,
  type Materializer,
  type PreStepInput,
  type SkillCallInput,
  type Tool,
} from "./client.js";
export { MAX_PAYLOAD_SIZE, type Encoding } from "./codec.js";
export {
  BadPayloadError,
  ClosedError,
  ExpiredError,
  MaterializeError,
  RejectedError,
  SkillstreamError,
  TimeoutError,
  TooLargeError,
  UnavailableError,
} from "./errors.js";
export type { Catalog, CatalogHead, Compaction, Decision, PreStep, SkillCall, ToolDefinition, ToolResult } from "./gen/wire.js";
export { resourcePath, validStoreName } from "./storeformat.js";
export { formatStoreToken, parseStoreToken, validStoreEpoch, type StoreToken } from "./storetoken.js";
export { checkPayload, type Problem, type Strictness } from "./schema.js";
