package store

import (
	"context"
	"fmt"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers"
)

// Files implements providers.Filer: the files of the winning entry called
// name for q, read by digest from the object store and verified against
// it (a mismatch is an error wrapping skillstore.ErrBadArchive), within the
// provider's limits and maxFiles and maxBytes.
func (p *Provider) Files(ctx context.Context, name string, q catalog.Query, maxFiles int, maxBytes int64) ([]providers.File, error) {
	if !catalog.ValidName(name) {
		return nil, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	e, _, _, ok := p.find(name, q)
	if !ok {
		return nil, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
	}
	lim := p.lim
	if maxFiles > 0 && (lim.MaxFiles <= 0 || maxFiles < lim.MaxFiles) {
		lim.MaxFiles = maxFiles
	}
	if maxBytes > 0 && (lim.MaxBytes <= 0 || maxBytes < lim.MaxBytes) {
		lim.MaxBytes = maxBytes
	}
	files, err := skillstore.Fetch(ctx, p.obs, e.rec.Digest, lim)
	p.fetches.Add(1)
	if err != nil {
		return nil, fmt.Errorf("skill %q: %w", name, err)
	}
	out := make([]providers.File, len(files))
	for i, f := range files {
		out[i] = providers.File{Path: f.Path, Data: f.Data}
	}
	return out, nil
}

// Version implements providers.Versioner: the digest of the winning
// record called name for q, which names its files exactly (the object is
// named by it), from the index kept in memory.
func (p *Provider) Version(name string, q catalog.Query) providers.Version {
	e, _, _, ok := p.find(name, q)
	if !ok {
		return providers.Version{}
	}
	return providers.Version{Token: "sha256:" + e.rec.Digest, Digest: e.rec.Digest}
}

var (
	_ providers.Filer     = (*Provider)(nil)
	_ providers.Versioner = (*Provider)(nil)
)
