package mcp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// completeResult carries the fields the SDK leaves to the author of a
// custom method's result: resultType, and the caching hints (embedded
// sdk.Cacheable).
type completeResult struct {
	sdk.ResultBase
	ResultType string `json:"resultType"`
	sdk.Cacheable
}

func (s *Server) complete() completeResult {
	return completeResult{ResultType: "complete",
		Cacheable: sdk.Cacheable{TTLMs: int(s.cfg.TTL / time.Millisecond), CacheScope: "public"}}
}

// listSkillsParams are the params of skills/list.
type listSkillsParams struct {
	sdk.ParamsBase
	Cursor *string `json:"cursor,omitempty"`
}

type listSkillsResult struct {
	completeResult
	Skills     []json.RawMessage `json:"skills"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

// listSkills answers skills/list: entries by name, a page at a time.
func (s *Server) listSkills(_ context.Context, _ *sdk.ServerSession, p *listSkillsParams) (*listSkillsResult, error) {
	st := s.st.Load()
	start := 0
	if p != nil && p.Cursor != nil {
		after, ok := s.cur.check(*p.Cursor)
		if !ok {
			return nil, invalidParams("skills/list: cursor %s was not issued by this server", quote(*p.Cursor))
		}
		start = st.after(after)
	}
	res := &listSkillsResult{completeResult: s.complete(), Skills: []json.RawMessage{}}
	size := 0
	i := start
	for ; i < len(st.skills) && len(res.Skills) < s.cfg.PageSize; i++ {
		e := st.skills[i]
		if len(res.Skills) > 0 && size+len(e.json) > s.cfg.PageBytes {
			break
		}
		res.Skills = append(res.Skills, e.json)
		size += len(e.json)
	}
	if i < len(st.skills) {
		res.NextCursor = s.cur.issue(st.skills[i-1].name)
	}
	return res, nil
}

// getSkillParams are the params of skills/get.
type getSkillParams struct {
	sdk.ParamsBase
	URI *string `json:"uri"`
}

type getSkillResult struct {
	completeResult
	Skill json.RawMessage `json:"skill"`
}

// getSkill answers skills/get: the entry of the skill whose SKILL.md is
// at uri.
func (s *Server) getSkill(_ context.Context, _ *sdk.ServerSession, p *getSkillParams) (*getSkillResult, error) {
	if p == nil || p.URI == nil {
		return nil, invalidParams("skills/get: params.uri is required")
	}
	name, rest, ok := splitURI(*p.URI)
	e := s.st.Load().find(name)
	if !ok || rest != agentskills.SkillFile || e == nil {
		return nil, invalidParams("No skill is served at %s", quote(*p.URI))
	}
	return &getSkillResult{completeResult: s.complete(), Skill: e.json}, nil
}

// readDirectoryParams are the params of resources/directory/read.
type readDirectoryParams struct {
	sdk.ParamsBase
	URI    *string `json:"uri"`
	Cursor *string `json:"cursor,omitempty"`
}

type readDirectoryResult struct {
	completeResult
	Resources []*sdk.Resource `json:"resources"`
}

// readDirectory answers resources/directory/read: the direct children of
// a served skill directory, on one page.
func (s *Server) readDirectory(_ context.Context, _ *sdk.ServerSession, p *readDirectoryParams) (*readDirectoryResult, error) {
	if p == nil || p.URI == nil {
		return nil, invalidParams("resources/directory/read: params.uri is required")
	}
	if p.Cursor != nil {
		return nil, invalidParams("resources/directory/read: cursor %s was not issued by this server", quote(*p.Cursor))
	}
	name, rest, ok := splitURI(*p.URI)
	e := s.st.Load().find(name)
	var children []child
	found := false
	if ok && e != nil {
		children, found = e.dirs[rest]
	}
	if !found {
		return nil, invalidParams("%s is not a directory resource", quote(*p.URI))
	}
	res := &readDirectoryResult{completeResult: s.complete(), Resources: make([]*sdk.Resource, 0, len(children))}
	for _, c := range children {
		if c.file == nil {
			d := c.name
			if rest != "" {
				d = rest + "/" + c.name
			}
			res.Resources = append(res.Resources, &sdk.Resource{URI: dirURI(name, d), Name: c.name, MIMEType: "inode/directory"})
			continue
		}
		r := s.fileResource(e, c.file)
		r.Name = c.name // in a directory, a file is called by its name
		res.Resources = append(res.Resources, r)
	}
	return res, nil
}

// fileResource is the resource metadata of a served file.
func (s *Server) fileResource(e *entry, f *fileMeta) *sdk.Resource {
	r := &sdk.Resource{URI: fileURI(e.name, f.path), Name: baseName(f.path), MIMEType: f.mime, Size: f.size}
	if f.path == agentskills.SkillFile {
		r.Name, r.Description = e.name, e.description
	}
	return r
}

func baseName(p string) string {
	if d := dirOf(p); d != "" {
		return p[len(d)+1:]
	}
	return p
}

// readContents is one content of a resources/read result. Text is a
// pointer so that an empty text file is `text: ""`, never an absent field.
type readContents struct {
	URI      string  `json:"uri"`
	MIMEType string  `json:"mimeType,omitempty"`
	Text     *string `json:"text,omitempty"`
	Blob     *string `json:"blob,omitempty"`
}

type readResult struct {
	completeResult
	Contents []readContents `json:"contents"`
}

// readResource answers resources/read for uri: the current bytes of a
// served file, read through the registry from the winner the skill tool
// would load. Anything not served is -32602, and nothing is read for it.
func (s *Server) readResource(ctx context.Context, uri string) (*readResult, error) {
	name, rest, ok := splitURI(uri)
	e := s.st.Load().find(name)
	var f *fileMeta
	if ok && e != nil {
		f = e.files[rest]
	}
	if f == nil {
		return nil, invalidParams("No resource is served at %s", quote(uri))
	}
	data, found := s.cache.files(e.digest, f.path)
	if !found {
		ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
		defer cancel()
		files, err := s.reg.Files(ctx, name, s.cfg.Query, MaxFiles, MaxBytes)
		if errors.Is(err, catalog.ErrNotFound) {
			return nil, invalidParams("No resource is served at %s", quote(uri))
		}
		if err != nil {
			return nil, err
		}
		if d, err := skillDigest(files); err == nil {
			s.cache.put(d, files)
		}
		for _, pf := range files {
			if pf.Path == f.path {
				data, found = pf.Data, true
				break
			}
		}
	}
	if !found {
		return nil, invalidParams("No resource is served at %s", quote(uri))
	}
	mime, binary := mimeOf(f.path, data)
	if f.path == agentskills.SkillFile {
		mime = "text/markdown"
	}
	c := readContents{URI: uri, MIMEType: mime}
	if binary {
		b := base64.StdEncoding.EncodeToString(data)
		c.Blob = &b
	} else {
		t := string(data)
		c.Text = &t
	}
	return &readResult{completeResult: s.complete(), Contents: []readContents{c}}, nil
}

// intercept answers resources/read itself (see readResource): the SDK's
// own lookup would answer unknown URIs with an error it cannot always
// encode, and would drop the text of an empty file.
func (s *Server) intercept(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "resources/read" {
			return next(ctx, method, req)
		}
		p, ok := req.GetParams().(*sdk.ReadResourceParams)
		if !ok || p == nil {
			return nil, invalidParams("resources/read: params.uri is required")
		}
		return s.readResource(ctx, p.URI)
	}
}

// callTool runs the skill tool: the same text a session's tool call gets.
func (s *Server) callTool(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args struct {
		Name json.RawMessage `json:"name"`
	}
	var name string
	if req.Params != nil && len(req.Params.Arguments) > 0 {
		_ = json.Unmarshal(req.Params.Arguments, &args)
	}
	if err := json.Unmarshal(args.Name, &name); err != nil {
		// Not a string (or absent): refused as a name outside the grammar,
		// shown as given.
		raw := string(args.Name)
		if len(raw) > 200 {
			raw = raw[:200]
		}
		res := catalog.Result{Err: &catalog.ToolError{Code: catalog.CodeInvalidName, Message: `invalid skill name "` + raw + `"`}}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Text()}}, IsError: true}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	res := catalog.Execute(ctx, lookup{s.reg, s.sessionQuery(req.Session)}, name, s.cfg.Options)
	if v := res.Value; v != nil && v.ResourceBase == nil && s.st.Load().find(name) != nil {
		// A skill without a place of its own for its files (a store
		// skill) has them served here: its directory resource is where
		// its relative paths resolve.
		v.ResourceBase = &catalog.ResourceBase{Kind: catalog.ResourceDirectory, Path: dirURI(name, "")}
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Text()}}, IsError: res.Err != nil}, nil
}

// callSearch runs the skill_search tool: the text a session's search
// gets (catalog.Search over the index bound to the served query), isError
// for its errors. The arguments are read as JSON gives them, as the
// processor reads a search's: whether they hold is the tool's to say.
func (s *Server) callSearch(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	var args map[string]any // keys matched exactly; null is absent
	if req.Params != nil && len(req.Params.Arguments) > 0 {
		// Arguments that are not an object read as none: the query is
		// then missing.
		_ = json.Unmarshal(req.Params.Arguments, &args)
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallTimeout)
	defer cancel()
	res := catalog.Search(ctx, s.cfg.Search.Searcher(s.sessionQuery(req.Session)),
		catalog.SearchArgs{Query: args["query"], Limit: args["limit"], Offset: args["offset"]}, s.cfg.Options)
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: res.Text()}}, IsError: res.Err != nil}, nil
}

// releaser is a Registry whose skills can be released to a share of
// sessions first (providers.Releaser).
type releaser interface {
	Releases(q catalog.Query) []catalog.Release
}

// sessionQuery is the served query for a host's session: its Canary names
// the releases whose candidate the session takes (catalog.Cohort of the
// tenant and the MCP session id, as the processor decides for a session
// of its log). Sessions without an id (stdio: one host) share the cohort
// of the empty id. Without a release the served query as it is.
func (s *Server) sessionQuery(ss *sdk.ServerSession) catalog.Query {
	q := s.cfg.Query
	q.Canary = ""
	rl, ok := s.reg.(releaser)
	if !ok {
		return q
	}
	if rels := rl.Releases(q); len(rels) > 0 {
		var id string
		if ss != nil {
			id = ss.ID()
		}
		q.Canary = catalog.Cohort(s.cfg.Tenant, id, rels)
	}
	return q
}

// lookup binds the registry to the served query for catalog.Execute.
type lookup struct {
	reg Registry
	q   catalog.Query
}

func (l lookup) Resolve(ctx context.Context, name string) (catalog.Summary, error) {
	return l.reg.Resolve(ctx, name, l.q)
}

func (l lookup) Load(ctx context.Context, name string) (catalog.Skill, error) {
	return l.reg.Load(ctx, name, l.q)
}

var _ Registry = (*providers.Registry)(nil)
