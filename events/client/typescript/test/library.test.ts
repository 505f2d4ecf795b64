// A multi-tenant deployment's shared library skills are store skills too:
// their files are materialised (from the library's object store).
import { test } from "node:test";
import assert from "node:assert/strict";

import { isStoreSkill, LIBRARY_PROVIDER, DEFAULT_LIBRARY_OBJECTS, type ToolResult } from "../src/index.js";

function result(provider: string): ToolResult {
  return {
    v: 1,
    session: "s",
    call: "c",
    triggerSeq: 1,
    isError: false,
    text: "t",
    value: { name: "shared-style", provider, digest: "a".repeat(64), resourceBase: { kind: "directory", path: "/r/shared-style/aaaaaaaaaaaaaaaa" } },
  } as ToolResult;
}

test("library skills are materialised like store skills", () => {
  assert.equal(LIBRARY_PROVIDER, "library");
  assert.equal(DEFAULT_LIBRARY_OBJECTS, "LIBRARY");
  assert.ok(isStoreSkill(result("store")));
  assert.ok(isStoreSkill(result(LIBRARY_PROVIDER)));
  assert.ok(!isStoreSkill(result("folder")));
});
