package events

// CatalogParts is a msgpack catalog record split into its own fields and
// the shared part every session given the same catalog carries byte for
// byte (its text and source, in that order, as CatalogBody encodes them).
// A reader that has decoded one record of a body can recognise the body in
// the next by its bytes instead of decoding it again.
type CatalogParts struct {
	Session, Step, ID, Role string
	// Body is the text and source pairs, from the "text" key to the end.
	Body []byte
}

// SplitCatalog splits b, untrusted msgpack bytes, if it has the shape a
// processor encodes: a map of seven pairs, v (this package's Version),
// session, step, id and role first, each a string, then text and source.
// It reports false for any other shape, and Validate says whether the
// fields split off are valid. It does not look into the body beyond its
// first key: a record whose body decodes, and only that, is a catalog
// (DecodeCatalogIn). Bytes that split and whose body is the body of a
// record that decoded decode to that record's text and source with these
// fields.
func SplitCatalog(b []byte) (CatalogParts, bool) {
	var p CatalogParts
	r := plain{b: b}
	if n, ok := r.container(false); !ok || n != 7 {
		return p, false
	}
	if k, ok := r.strBytes(); !ok || string(k) != "v" {
		return p, false
	}
	if v, ok := r.int(); !ok || v != Version {
		return p, false
	}
	for _, f := range [...]struct {
		key string
		dst *string
	}{{"session", &p.Session}, {"step", &p.Step}, {"id", &p.ID}, {"role", &p.Role}} {
		k, ok := r.strBytes()
		if !ok || string(k) != f.key {
			return p, false
		}
		if *f.dst, ok = r.str(); !ok {
			return p, false
		}
	}
	start := r.i
	if k, ok := r.strBytes(); !ok || string(k) != "text" {
		return p, false
	}
	p.Body = b[start:]
	return p, true
}

// Validate checks the fields split off as DecodeCatalogIn checks them in
// layout l.
func (p CatalogParts) Validate(l Layout) error {
	return Catalog{V: Version, Session: p.Session, Step: p.Step, ID: p.ID, Role: p.Role}.ValidateIn(l)
}
