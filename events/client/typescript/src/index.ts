// @skillstream/client: the skillstream worker client for TypeScript on
// Node. See the README's "TypeScript worker" section and
// events/protocol.md for the wire protocol it speaks.
export {
  Client,
  catalogKeep,
  connect,
  instructionsOf,
  isSearchArgsError,
  isStoreSkill,
  searchValue,
  skillSearchTool,
  skillTool,
  withContent,
  DEFAULT_INBOX_PREFIX,
  DEFAULT_MAX_PENDING,
  DEFAULT_PREFIX,
  DEFAULT_RETRY_INTERVAL_MS,
  DEFAULT_SKILL_OBJECTS,
  SKILL_SEARCH_TOOL,
  STORE_PROVIDER,
  LIBRARY_PROVIDER,
  DEFAULT_LIBRARY_OBJECTS,
  TOOL_DEFINITION_SUBJECT,
  TOOL_DEFINITIONS_SUBJECT,
  type CallOptions,
  type ClientOptions,
  type ClientStats,
  type CompactionInput,
  type Layout,
  type Materializer,
  type PreStepInput,
  type SearchValue,
  type SkillCallInput,
  type SkillSearchInput,
  type SkillValue,
  type Tool,
} from "./client.js";
export { MAX_PAYLOAD_SIZE, type Encoding } from "./codec.js";
export {
  BadPayloadError,
  ClosedError,
  ExpiredError,
  MaterializeError,
  UntrustedSkillError,
  RejectedError,
  SkillstreamError,
  TimeoutError,
  TooLargeError,
  UnavailableError,
} from "./errors.js";
export type {
  Catalog,
  CatalogHead,
  Compaction,
  Decision,
  PreStep,
  SkillCall,
  SkillSearch,
  ToolDefinition,
  ToolDefinitions,
  ToolResult,
} from "./gen/wire.js";
export { resourcePath, validStoreName } from "./storeformat.js";
export { statement, untrustedReason, validPublicKey, type SkillSignature } from "./signature.js";
export { formatStoreToken, parseStoreToken, validStoreEpoch, type StoreToken } from "./storetoken.js";
export { checkPayload, type Problem, type Strictness } from "./schema.js";
