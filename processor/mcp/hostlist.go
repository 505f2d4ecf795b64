package mcp

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// HostListing is what ListAsHost measured.
type HostListing struct {
	Connect, List time.Duration
	// Pages of resources/list, and the skills listed (SKILL.md resources).
	Pages, Skills int
}

// ListAsHost connects to the streamable HTTP endpoint as an MCP host does
// (the official SDK client, with token as its bearer token when set) and
// lists every resource, every page, timing the connection and the listing.
// bench --scale uses it.
func ListAsHost(ctx context.Context, endpoint, token string) (HostListing, error) {
	var r HostListing
	host := sdk.NewClient(&sdk.Implementation{Name: "skillstream-bench", Version: "1"}, nil)
	start := time.Now()
	cs, err := host.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{token}, Timeout: time.Minute}}, nil)
	if err != nil {
		return r, fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	r.Connect = time.Since(start)
	start = time.Now()
	params := &sdk.ListResourcesParams{}
	for {
		res, err := cs.ListResources(ctx, params)
		if err != nil {
			return r, fmt.Errorf("resources/list: %w", err)
		}
		r.Pages++
		for _, res := range res.Resources {
			if strings.HasPrefix(res.URI, "skill://") && strings.HasSuffix(res.URI, "/SKILL.md") {
				r.Skills++
			}
		}
		if res.NextCursor == "" {
			break
		}
		params = &sdk.ListResourcesParams{Cursor: res.NextCursor}
	}
	r.List = time.Since(start)
	return r, nil
}

// bearer sends every request with a bearer token, as a host configured
// with one does.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}
