package events

import (
	"encoding/json"
	"path"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxIDLength is the longest step or call id allowed, in bytes.
const MaxIDLength = 256

func checkVersion(v int) error {
	if v != Version {
		return versionError(int64(v))
	}
	return nil
}

// checkSessionField checks a payload's session: present, and a session id
// of layout l.
func checkSessionField(l Layout, sid string) error {
	if sid == "" {
		return &FieldError{Field: "session", Problem: problemMissing}
	}
	if !ValidSessionIn(l, sid) {
		if l == LayoutOwner {
			return &FieldError{Field: "session", Problem: problemBadOwnerSession}
		}
		return &FieldError{Field: "session", Problem: problemBadSession}
	}
	return nil
}

// checkID checks a step or call id: non-empty unless optional, at most
// MaxIDLength bytes, valid UTF-8 without control characters (ids end up in
// message ids and headers, where CR or LF would be harmful).
func checkID(field, id string, optional bool) error {
	if id == "" && !optional {
		return &FieldError{Field: field, Problem: problemMissing}
	}
	if len(id) > MaxIDLength {
		return &FieldError{Field: field, Problem: "too long: " + strconv.Itoa(len(id)) + " bytes, limit " + strconv.Itoa(MaxIDLength)}
	}
	if !utf8.ValidString(id) {
		return &FieldError{Field: field, Problem: "not valid UTF-8"}
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return &FieldError{Field: field, Problem: "control character " + strconv.QuoteRune(r)}
		}
	}
	return nil
}

func checkDeadline(ms int64) error {
	if ms < 0 {
		return &FieldError{Field: "deadlineMs", Problem: "negative: " + strconv.FormatInt(ms, 10)}
	}
	return nil
}

// MaxResourceDirLength is the longest resourceDir accepted, in bytes.
const MaxResourceDirLength = 1024

// Bounds of a path a worker names (cwd, resourceDir). They are those of
// Linux (PATH_MAX 4096 bytes with its terminating NUL, NAME_MAX 255 bytes
// per component), so no path a worker could really use is refused, plus a
// bound on the number of components: every component of a cwd costs the
// processor a system call and a watch on the way to the project root, and
// no real working directory is 256 folders deep. A longer path is refused
// before anything touches the file system, so a trigger's cost does not
// grow with what a hostile worker sends.
const (
	MaxPathLength     = 4095
	MaxPathComponents = 256
	MaxPathComponent  = 255
)

// checkPath checks the bounds of a path-like field: at most MaxPathLength
// bytes, MaxPathComponents components of at most MaxPathComponent bytes
// each, valid UTF-8 without control characters. Whether it must be
// absolute is for the caller.
func checkPath(field, p string, maxLen int) error {
	bad := func(problem string) error { return &FieldError{Field: field, Problem: problem} }
	if len(p) > maxLen {
		return bad("too long: " + strconv.Itoa(len(p)) + " bytes, limit " + strconv.Itoa(maxLen))
	}
	if !utf8.ValidString(p) {
		return bad("not valid UTF-8")
	}
	components, run := 0, 0
	for i := 0; i < len(p); i++ {
		c := p[i]
		if c == '/' {
			run = 0
			continue
		}
		if run == 0 {
			if components++; components > MaxPathComponents {
				return bad("too many components: more than " + strconv.Itoa(MaxPathComponents))
			}
		}
		if run++; run > MaxPathComponent {
			return bad("a component is longer than " + strconv.Itoa(MaxPathComponent) + " bytes")
		}
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return bad("control character " + strconv.QuoteRune(r))
		}
	}
	return nil
}

// checkCwd checks an optional cwd's bounds (checkPath). That it is
// absolute, and where it may lead, is the processor's to check.
func checkCwd(cwd string) error {
	if cwd == "" {
		return nil
	}
	return checkPath("cwd", cwd, MaxPathLength)
}

// checkProject checks an optional store project id: the same grammar as a
// session token.
func checkProject(id string) error {
	if id != "" && !ValidSession(id) {
		return &FieldError{Field: "project", Problem: "not a project id (^[A-Za-z0-9_-]{1,128}$)"}
	}
	return nil
}

// MaxEpochLength is the longest store epoch a trigger may name
// (minStoreEpoch), in bytes. skillstream's epochs are 16 hex digits.
const MaxEpochLength = 64

// checkStoreEpoch checks an optional minStoreEpoch: at most MaxEpochLength
// bytes of A-Z a-z 0-9 _ - (the session token's alphabet), so that it can
// be quoted in an answer or a log as it is.
func checkStoreEpoch(epoch string) error {
	if epoch != "" && (len(epoch) > MaxEpochLength || !ValidSession(epoch)) {
		return &FieldError{Field: "minStoreEpoch", Problem: "not a store epoch (^[A-Za-z0-9_-]{1,64}$)"}
	}
	return nil
}

// checkResourceDir checks an optional resourceDir: an absolute, clean
// slash-separated path of valid UTF-8 without control characters. It is a
// path on the worker's host; the processor never touches it, it only names
// it in tool results.
func checkResourceDir(dir string) error {
	if dir == "" {
		return nil
	}
	if err := checkPath("resourceDir", dir, MaxResourceDirLength); err != nil {
		return err
	}
	bad := func(problem string) error { return &FieldError{Field: "resourceDir", Problem: problem} }
	switch {
	case !strings.HasPrefix(dir, "/"):
		return bad("not an absolute path")
	case path.Clean(dir) != dir:
		return bad("not a clean path (no \".\", \"..\", \"//\" or trailing \"/\")")
	}
	return nil
}

// MaxUserTexts is the most strings a pre-step's userText may hold, and
// MaxUserTextBytes the longest one, in bytes. The whole payload stays
// within MaxPayloadSize besides.
const (
	MaxUserTexts     = 64
	MaxUserTextBytes = 256 << 10
)

// checkUserText checks a pre-step's userText: at most MaxUserTexts strings
// of at most MaxUserTextBytes each, valid UTF-8, no control characters but
// tab, line feed and carriage return.
func checkUserText(texts []string) error {
	if len(texts) > MaxUserTexts {
		return &FieldError{Field: "userText", Problem: "too many strings: " + strconv.Itoa(len(texts)) + ", limit " + strconv.Itoa(MaxUserTexts)}
	}
	for i, s := range texts {
		bad := func(problem string) error {
			return &FieldError{Field: "userText[" + strconv.Itoa(i) + "]", Problem: problem}
		}
		if len(s) > MaxUserTextBytes {
			return bad("too long: " + strconv.Itoa(len(s)) + " bytes, limit " + strconv.Itoa(MaxUserTextBytes))
		}
		if !utf8.ValidString(s) {
			return bad("not valid UTF-8")
		}
		for _, r := range s {
			if unicode.IsControl(r) && r != '\t' && r != '\n' && r != '\r' {
				return bad("control character " + strconv.QuoteRune(r))
			}
		}
	}
	return nil
}

// MaxTools is the most tools a pre-step's tool view may list, and
// MaxToolFieldLength the longest tool name or owner, in bytes. Agents show
// a model tens to a few hundred tools, and model APIs cap tool names at 64
// to 128 characters; every tool costs a processor a comparison per
// pre-step.
const (
	MaxTools           = 1024
	MaxToolFieldLength = 256
)

// checkTools checks a pre-step's tool view: at most MaxTools tools, each
// with a name, name and owner at most MaxToolFieldLength bytes. The count
// is checked first, so a long list costs nothing more to refuse.
func checkTools(tools []Tool) error {
	if len(tools) > MaxTools {
		return &FieldError{Field: "tools", Problem: "too many tools: " + strconv.Itoa(len(tools)) + ", limit " + strconv.Itoa(MaxTools)}
	}
	for i, t := range tools {
		field := func(key string) string { return "tools[" + strconv.Itoa(i) + "]." + key }
		switch {
		case t.Name == "":
			return &FieldError{Field: field("name"), Problem: problemMissing}
		case len(t.Name) > MaxToolFieldLength:
			return &FieldError{Field: field("name"), Problem: "too long: " + strconv.Itoa(len(t.Name)) + " bytes, limit " + strconv.Itoa(MaxToolFieldLength)}
		case len(t.Owner) > MaxToolFieldLength:
			return &FieldError{Field: field("owner"), Problem: "too long: " + strconv.Itoa(len(t.Owner)) + " bytes, limit " + strconv.Itoa(MaxToolFieldLength)}
		}
	}
	return nil
}

func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// Validate checks what a processor relies on: v is 1, session is a valid
// token, step is present and at most MaxIDLength bytes, the tools are
// within their limits and each has a name (checkTools), deadlineMs is not
// negative, userText is within its limits (checkUserText).
func (p PreStep) Validate() error { return p.ValidateIn(LayoutFlat) }

// ValidateIn is Validate with the session id checked in layout l.
func (p PreStep) ValidateIn(l Layout) error {
	return first(checkVersion(p.V), checkSessionField(l, p.Session), checkID("step", p.Step, false), checkDeadline(p.DeadlineMs),
		checkCwd(p.Cwd), checkProject(p.Project), checkResourceDir(p.ResourceDir), checkStoreEpoch(p.MinStoreEpoch),
		checkUserText(p.UserText), checkTools(p.Tools))
}

// Validate checks v, session, call (present, at most MaxIDLength bytes) and
// deadlineMs. An empty args.name is valid here: the skill tool answers it
// with its own invalid-name error. (A missing args.name is reported by the
// decoders, which can tell missing from empty.)
func (c SkillCall) Validate() error { return c.ValidateIn(LayoutFlat) }

// ValidateIn is Validate with the session id checked in layout l.
func (c SkillCall) ValidateIn(l Layout) error {
	return first(checkVersion(c.V), checkSessionField(l, c.Session), checkID("call", c.Call, false), checkDeadline(c.DeadlineMs),
		checkCwd(c.Cwd), checkProject(c.Project), checkResourceDir(c.ResourceDir), checkStoreEpoch(c.MinStoreEpoch))
}

// Validate checks what SkillCall.Validate checks. The arguments are the
// tool's to judge (see SearchArgs).
func (c SkillSearch) Validate() error { return c.ValidateIn(LayoutFlat) }

// ValidateIn is Validate with the session id checked in layout l.
func (c SkillSearch) ValidateIn(l Layout) error {
	return first(checkVersion(c.V), checkSessionField(l, c.Session), checkID("call", c.Call, false), checkDeadline(c.DeadlineMs),
		checkCwd(c.Cwd), checkProject(c.Project), checkResourceDir(c.ResourceDir), checkStoreEpoch(c.MinStoreEpoch))
}

// Validate checks v and session.
func (c Compaction) Validate() error { return c.ValidateIn(LayoutFlat) }

// ValidateIn is Validate with the session id checked in layout l.
func (c Compaction) ValidateIn(l Layout) error {
	return first(checkVersion(c.V), checkSessionField(l, c.Session))
}

// Validate checks v, session and step.
func (h CatalogHead) Validate() error { return h.ValidateIn(LayoutFlat) }

// ValidateIn is Validate with the session id checked in layout l.
func (h CatalogHead) ValidateIn(l Layout) error {
	return first(checkVersion(h.V), checkSessionField(l, h.Session), checkID("step", h.Step, false))
}

// Validate checks v, session and step. Whether a catalog is recognisable
// (producer, text) is for the reader to decide, not a decoding error.
func (c Catalog) Validate() error { return c.ValidateIn(LayoutFlat) }

// ValidateIn is Validate with the session id checked in layout l.
func (c Catalog) ValidateIn(l Layout) error {
	return first(checkVersion(c.V), checkSessionField(l, c.Session), checkID("step", c.Step, false))
}

// Validate checks v, session, step and name (present).
func (x SkillInvocation) Validate() error { return x.ValidateIn(LayoutFlat) }

// ValidateIn is Validate with the session id checked in layout l.
func (x SkillInvocation) ValidateIn(l Layout) error {
	if err := first(checkVersion(x.V), checkSessionField(l, x.Session), checkID("step", x.Step, false)); err != nil {
		return err
	}
	if x.Name == "" {
		return &FieldError{Field: "name", Problem: problemMissing}
	}
	return nil
}

// Validate checks v, session, outcome (present; values this package does not
// name are accepted for forward compatibility), step (present unless the
// outcome is "rejected", which may answer an unreadable trigger) and the
// catalog when present. A "rejected" Decision may also lack a session, or
// carry one that is not a valid token: it may answer a trigger whose session
// could not be read.
func (x Decision) Validate() error { return x.ValidateIn(LayoutFlat) }

// ValidateIn is Validate with the session ids (the decision's, its
// catalog's and its invocations') checked in layout l.
func (x Decision) ValidateIn(l Layout) error {
	rejected := x.Outcome == OutcomeRejected
	session := checkSessionField(l, x.Session)
	if rejected {
		session = nil
	}
	if err := first(checkVersion(x.V), session, checkID("step", x.Step, rejected)); err != nil {
		return err
	}
	if x.Outcome == "" {
		return &FieldError{Field: "outcome", Problem: problemMissing}
	}
	if x.Catalog != nil {
		if err := x.Catalog.ValidateIn(l); err != nil {
			return prefixField("catalog", err)
		}
	}
	for i, inv := range x.Invocations {
		if err := inv.ValidateIn(l); err != nil {
			return prefixField("invocations["+strconv.Itoa(i)+"]", err)
		}
	}
	return nil
}

// Validate checks v, session and call. A bad_request result may lack both,
// or carry a session that is not a valid token: it may answer a skill call
// that could not be read.
func (r ToolResult) Validate() error { return r.ValidateIn(LayoutFlat) }

// ValidateIn is Validate with the session id checked in layout l.
func (r ToolResult) ValidateIn(l Layout) error {
	badRequest := r.Error != nil && r.Error.Code == CodeBadRequest
	session := checkSessionField(l, r.Session)
	if badRequest {
		session = nil
	}
	return first(checkVersion(r.V), session, checkID("call", r.Call, badRequest))
}

// Validate checks that the tool has a name and that parameters, when set, is
// valid JSON.
func (t ToolDefinition) Validate() error {
	if t.Name == "" {
		return &FieldError{Field: "name", Problem: problemMissing}
	}
	if len(t.Parameters) > 0 && !json.Valid(t.Parameters) {
		return &FieldError{Field: "parameters", Problem: "not valid JSON"}
	}
	return nil
}
