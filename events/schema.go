package events

import "embed"

// Schemas holds a JSON Schema (draft 2020-12) of every payload, as JSON
// text: schema/prestep.json, skillcall.json, skillsearch.json,
// compaction.json, catalog.json, cataloghead.json, decision.json,
// toolresult.json, skillinvocation.json, tooldefinition.json,
// tooldefinitions.json, and
// defs.json with the definitions they share. Each has an absolute $id
// under SchemaBase; their references are relative to it. They describe
// the JSON encoding; a msgpack payload has the same keys and values.
//
//go:embed schema/*.json
var Schemas embed.FS

// SchemaBase is the $id prefix of the embedded schemas.
const SchemaBase = "https://github.com/skillstream/skillstream/events/schema/"
