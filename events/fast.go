package events

import (
	"encoding/binary"
	"math"
)

// Every trigger a processor handles is decoded first, and nearly every one
// has the same plain shape: a map of the protocol's keys, each once, with
// strings where strings belong and small integers where integers belong.
// fastMsgpack reads exactly that shape straight from the bytes, without the
// library's reflection; anything else (an unknown key, a key twice, nil, a
// binary string, an integer id, a wrong type) makes it give up, and the
// payload is decoded by the library as before. So it only ever gives the
// result the library would have given, which FuzzFastTriggers checks.

// fastDecoding switches the fast path off in tests that compare the two.
var fastDecoding = true

// fastWire is a wire form with a fast path for its plain shape.
type fastWire interface {
	// fastMsgpack decodes b, unchecked bytes, and reports whether it did;
	// when it did not, the wire form is left as it was. It takes only a
	// whole map of the plain shape, every read within b, nothing after
	// it: bytes that checkMsgpack passes (FuzzFastAnswers and
	// FuzzFastTriggers check it).
	fastMsgpack(b []byte) bool
}

// plain reads msgpack values of the plain shape from b. Its methods report
// false for anything else; b is untrusted, so every read checks its
// bounds, and a declared count is never more than the bytes of b.
type plain struct {
	b []byte
	i int
	// shared: entry lists may be given from knownLists (a Decision's).
	shared bool
}

func (r *plain) n(size int) (uint64, bool) {
	if r.i+size > len(r.b) {
		return 0, false
	}
	var v uint64
	switch size {
	case 1:
		v = uint64(r.b[r.i])
	case 2:
		v = uint64(binary.BigEndian.Uint16(r.b[r.i:]))
	case 4:
		v = uint64(binary.BigEndian.Uint32(r.b[r.i:]))
	case 8:
		v = binary.BigEndian.Uint64(r.b[r.i:])
	}
	r.i += size
	return v, true
}

func (r *plain) code() (byte, bool) {
	if r.i >= len(r.b) {
		return 0, false
	}
	c := r.b[r.i]
	r.i++
	return c, true
}

// container reads a map (array false) or array header.
func (r *plain) container(array bool) (int, bool) {
	c, ok := r.code()
	if !ok {
		return 0, false
	}
	fix, c16, c32 := byte(0x80), byte(0xde), byte(0xdf)
	if array {
		fix, c16, c32 = 0x90, 0xdc, 0xdd
	}
	var n uint64
	switch {
	case c >= fix && c <= fix+0x0f:
		return int(c - fix), true
	case c == c16:
		n, ok = r.n(2)
	case c == c32:
		n, ok = r.n(4)
	default:
		return 0, false
	}
	// Every value takes a byte at least: a count beyond the bytes left is
	// a lie, refused before anything is made for it.
	return int(n), ok && n <= uint64(len(r.b)-r.i)
}

// str reads a string (not nil, not binary).
func (r *plain) str() (string, bool) {
	b, ok := r.strBytes()
	return string(b), ok
}

// strBytes reads a string as the bytes it has in b.
func (r *plain) strBytes() ([]byte, bool) {
	c, ok := r.code()
	if !ok {
		return nil, false
	}
	var n uint64
	switch {
	case c >= 0xa0 && c <= 0xbf:
		n, ok = uint64(c&0x1f), true
	case c == 0xd9:
		n, ok = r.n(1)
	case c == 0xda:
		n, ok = r.n(2)
	case c == 0xdb:
		n, ok = r.n(4)
	default:
		return nil, false
	}
	if !ok || n > uint64(len(r.b)-r.i) {
		return nil, false
	}
	b := r.b[r.i : r.i+int(n)]
	r.i += int(n)
	return b, true
}

// int reads an integer that fits an int64 (not nil, not a float).
func (r *plain) int() (int64, bool) {
	c, ok := r.code()
	switch {
	case !ok:
		return 0, false
	case c <= 0x7f: // positive fixint
		return int64(c), true
	case c >= 0xe0: // negative fixint
		return int64(int8(c)), true
	case c >= 0xcc && c <= 0xcf: // uint 8, 16, 32, 64
		v, ok := r.n(1 << (c - 0xcc))
		return int64(v), ok && v <= math.MaxInt64
	case c >= 0xd0 && c <= 0xd3: // int 8, 16, 32, 64, sign-extended
		size := 1 << (c - 0xd0)
		v, ok := r.n(size)
		shift := 64 - 8*size
		return int64(v<<shift) >> shift, ok
	}
	return 0, false
}

// bool reads a boolean.
func (r *plain) bool() (bool, bool) {
	c, ok := r.code()
	switch {
	case ok && c == 0xc2:
		return false, true
	case ok && c == 0xc3:
		return true, true
	}
	return false, false
}

// fields reads a map, calling field for each key, which reads the value
// and returns the key's bit; a key given twice, or field reporting false,
// makes it report false.
func (r *plain) fields(field func(key string) (bit uint, ok bool)) bool {
	n, ok := r.container(false)
	if !ok {
		return false
	}
	var seen uint
	for range n {
		key, ok := r.str()
		if !ok {
			return false
		}
		bit, ok := field(key)
		if !ok || seen&bit != 0 {
			return false
		}
		seen |= bit
	}
	return true
}

// version reads "v" into *v as the wire forms keep it.
func (r *plain) version(v **int) bool {
	n, ok := r.int()
	if !ok || n < math.MinInt || n > math.MaxInt {
		return false
	}
	x := int(n)
	*v = &x
	return true
}

// triggerFields are where a fast path puts the fields both triggers have:
// "v", session, cwd, deadlineMs, project, resourceDir, minStoreRevision
// and minStoreEpoch, and the id, whose key (step or call) is idKey.
type triggerFields struct {
	v                                                 **int
	session, cwd, project, resourceDir, minStoreEpoch *string
	deadlineMs                                        *int64
	minStoreRevision                                  *uint64
	idKey                                             string
	id                                                *ID
}

// fastTrigger reads the map b of a trigger of the plain shape: the fields
// both triggers have into f, the one key of its own (tools, args) through
// own, which reads its value and reports its bit (1<<4) and success.
func fastTrigger(b []byte, f triggerFields, own func(r *plain, key string) (uint, bool)) bool {
	r := plain{b: b}
	str := func(dst *string, bit uint) (uint, bool) {
		s, ok := r.str()
		*dst = s
		return bit, ok
	}
	ok := r.fields(func(key string) (uint, bool) {
		switch key {
		case "v":
			return 1 << 0, r.version(f.v)
		case "session":
			return str(f.session, 1<<1)
		case f.idKey:
			s, ok := r.str()
			*f.id = ID(s)
			return 1 << 2, ok
		case "cwd":
			return str(f.cwd, 1<<3)
		case "deadlineMs":
			n, ok := r.int()
			*f.deadlineMs = n
			return 1 << 5, ok
		case "project":
			return str(f.project, 1<<6)
		case "resourceDir":
			return str(f.resourceDir, 1<<7)
		case "minStoreRevision":
			n, ok := r.int()
			*f.minStoreRevision = uint64(n)
			return 1 << 8, ok && n >= 0
		case "minStoreEpoch":
			return str(f.minStoreEpoch, 1<<10)
		}
		return own(&r, key)
	})
	return ok && r.i == len(b)
}

func (w *preStepWire) fastMsgpack(b []byte) bool {
	var x preStepWire
	f := triggerFields{&x.V, &x.Session, &x.Cwd, &x.Project, &x.ResourceDir, &x.MinStoreEpoch, &x.DeadlineMs, &x.MinStoreRevision, "step", &x.Step}
	ok := fastTrigger(b, f, func(r *plain, key string) (uint, bool) {
		switch key {
		case "tools":
			return 1 << 4, r.tools(&x.Tools)
		case "userText":
			return 1 << 9, r.strs(&x.UserText)
		}
		return 0, false
	})
	if ok {
		*w = x
	}
	return ok
}

// tools reads a pre-step's tool list: maps of name and owner.
func (r *plain) tools(dst *[]Tool) bool {
	n, ok := r.container(true)
	if !ok {
		return false
	}
	tools := make([]Tool, n)
	for i := range tools {
		t := &tools[i]
		ok := r.fields(func(key string) (uint, bool) {
			var ok bool
			switch key {
			case "name":
				t.Name, ok = r.str()
				return 1 << 0, ok
			case "owner":
				t.Owner, ok = r.str()
				return 1 << 1, ok
			}
			return 0, false
		})
		if !ok {
			return false
		}
	}
	*dst = tools
	return true
}

// strs reads a non-empty array of strings (a pre-step's userText); an
// empty one is left to the library, which alone says what it reads it as.
func (r *plain) strs(dst *[]string) bool {
	n, ok := r.container(true)
	if !ok || n == 0 {
		return false
	}
	out := make([]string, n)
	for i := range out {
		if out[i], ok = r.str(); !ok {
			return false
		}
	}
	*dst = out
	return true
}

func (w *skillCallWire) fastMsgpack(b []byte) bool {
	var x skillCallWire
	f := triggerFields{&x.V, &x.Session, &x.Cwd, &x.Project, &x.ResourceDir, &x.MinStoreEpoch, &x.DeadlineMs, &x.MinStoreRevision, "call", &x.Call}
	ok := fastTrigger(b, f, func(r *plain, key string) (uint, bool) {
		if key != "args" {
			return 0, false
		}
		var name *string
		ok := r.fields(func(key string) (uint, bool) {
			if key != "name" {
				return 0, false
			}
			s, ok := r.str()
			name = &s
			return 1, ok
		})
		x.Args = &struct {
			Name *string `msgpack:"name" json:"name"`
		}{Name: name}
		return 1 << 4, ok
	})
	if ok {
		*w = x
	}
	return ok
}

func (w *skillSearchWire) fastMsgpack(b []byte) bool {
	var x skillSearchWire
	f := triggerFields{&x.V, &x.Session, &x.Cwd, &x.Project, &x.ResourceDir, &x.MinStoreEpoch, &x.DeadlineMs, &x.MinStoreRevision, "call", &x.Call}
	ok := fastTrigger(b, f, func(r *plain, key string) (uint, bool) {
		if key != "args" {
			return 0, false
		}
		x.Args = new(SearchArgs)
		return 1 << 4, r.fields(func(key string) (uint, bool) {
			switch key {
			case "query":
				s, ok := r.str()
				x.Args.Query = s
				return 1 << 0, ok
			case "limit":
				n, ok := r.int()
				x.Args.Limit = n
				return 1 << 1, ok
			case "offset":
				n, ok := r.int()
				x.Args.Offset = n
				return 1 << 2, ok
			}
			return 0, false
		})
	})
	if ok {
		*w = x
	}
	return ok
}

// Answers are decoded by workers, and a pre-step's answer may carry a
// catalog of a thousand entries; the library reads each through
// reflection. The fast paths below read the plain shape of a Decision and
// of a Catalog as the processor writes them, and give up on anything else
// exactly as the triggers' do (FuzzFastAnswers checks both ways agree).

func (w *decisionWire) fastMsgpack(b []byte) bool {
	var x decisionWire
	r := plain{b: b, shared: true}
	ok := r.fields(func(key string) (uint, bool) {
		var ok bool
		switch key {
		case "v":
			return 1 << 0, r.version(&x.V)
		case "session":
			x.Session, ok = r.str()
			return 1 << 1, ok
		case "step":
			return 1 << 2, r.id(&x.Step)
		case "triggerSeq":
			x.TriggerSeq, ok = r.uint()
			return 1 << 3, ok
		case "outcome":
			x.Outcome, ok = r.str()
			return 1 << 4, ok
		case "catalog":
			x.Catalog = new(catalogWire)
			return 1 << 5, r.catalog(x.Catalog)
		case "error":
			x.Error = new(ErrorInfo)
			return 1 << 6, r.fields(func(key string) (uint, bool) {
				var ok bool
				switch key {
				case "code":
					x.Error.Code, ok = r.str()
					return 1 << 0, ok
				case "message":
					x.Error.Message, ok = r.str()
					return 1 << 1, ok
				}
				return 0, false
			})
		case "reason":
			x.Reason, ok = r.str()
			return 1 << 7, ok
		case "catalogSeq":
			x.CatalogSeq, ok = r.uint()
			return 1 << 8, ok
		case "catalogSeqs":
			return 1 << 9, r.uints(&x.CatalogSeqs)
		case "currentList":
			x.CurrentList = new(CurrentList)
			return 1 << 10, r.currentList(x.CurrentList)
		}
		return 0, false
	})
	if ok && r.i == len(b) {
		*w = x
		return true
	}
	return false
}

// uints reads a non-empty array of integers that are not negative (an
// empty one is left to the library).
func (r *plain) uints(dst *[]uint64) bool {
	n, ok := r.container(true)
	if !ok || n == 0 || n > len(r.b)-r.i {
		return false
	}
	out := make([]uint64, n)
	for i := range out {
		if out[i], ok = r.uint(); !ok {
			return false
		}
	}
	*dst = out
	return true
}

// currentList reads a Decision's currentList. A worker is sent the same
// list with every step of every session that has it, a thousand entries
// perhaps: the entries of the lists read last are kept, by their bytes,
// and given again (shared: they must not be modified) when the same bytes
// come again (knownEntries).
func (r *plain) currentList(l *CurrentList) bool {
	return r.fields(func(key string) (uint, bool) {
		var ok bool
		switch key {
		case "entries":
			return 1 << 0, r.knownEntries(&l.Entries)
		case "digest":
			l.Digest, ok = r.str()
			return 1 << 1, ok
		}
		return 0, false
	})
}

func (w *catalogWire) fastMsgpack(b []byte) bool {
	var x catalogWire
	r := plain{b: b}
	if r.catalog(&x) && r.i == len(b) {
		*w = x
		return true
	}
	return false
}

// id reads an id given as a string.
func (r *plain) id(dst *ID) bool {
	s, ok := r.str()
	*dst = ID(s)
	return ok
}

// uint reads an integer that is not negative and fits an int64.
func (r *plain) uint() (uint64, bool) {
	n, ok := r.int()
	return uint64(n), ok && n >= 0
}

// catalog reads a catalog record's map.
func (r *plain) catalog(x *catalogWire) bool {
	return r.fields(func(key string) (uint, bool) {
		var ok bool
		switch key {
		case "v":
			return 1 << 0, r.version(&x.V)
		case "session":
			x.Session, ok = r.str()
			return 1 << 1, ok
		case "step":
			return 1 << 2, r.id(&x.Step)
		case "id":
			x.ID, ok = r.str()
			return 1 << 3, ok
		case "role":
			x.Role, ok = r.str()
			return 1 << 4, ok
		case "text":
			x.Text, ok = r.str()
			return 1 << 5, ok
		case "source":
			return 1 << 6, r.source(&x.Source)
		}
		return 0, false
	})
}

// source reads a catalog's source.
func (r *plain) source(s *CatalogSource) bool {
	return r.fields(func(key string) (uint, bool) {
		var ok bool
		switch key {
		case "kind":
			s.Kind, ok = r.str()
			return 1 << 0, ok
		case "producer":
			s.Producer, ok = r.str()
			return 1 << 1, ok
		case "update":
			s.Update, ok = r.str()
			return 1 << 2, ok
		case "entries":
			if r.shared {
				return 1 << 3, r.knownEntries(&s.Entries)
			}
			return 1 << 3, r.entries(&s.Entries)
		case "digest":
			s.Digest, ok = r.str()
			return 1 << 4, ok
		case "omitted":
			var n int64
			n, ok = r.int()
			s.Omitted = int(n)
			return 1 << 5, ok && n >= math.MinInt && n <= math.MaxInt
		case "base":
			s.Base, ok = r.uint()
			return 1 << 7, ok
		case "changes":
			return 1 << 8, r.changes(&s.Changes)
		case "count":
			var n int64
			n, ok = r.int()
			s.Count = int(n)
			return 1 << 9, ok && n >= math.MinInt && n <= math.MaxInt
		case "options":
			s.Options = new(CatalogOptions)
			return 1 << 10, r.catalogOptions(s.Options)
		case "view":
			s.View = new(View)
			return 1 << 6, r.fields(func(key string) (uint, bool) {
				var ok bool
				switch key {
				case "revision":
					s.View.Revision, ok = r.uint()
					return 1 << 0, ok
				case "instance":
					s.View.Instance, ok = r.str()
					return 1 << 1, ok
				case "epoch":
					s.View.Epoch, ok = r.str()
					return 1 << 2, ok
				}
				return 0, false
			})
		}
		return 0, false
	})
}

// catalogOptions reads a catalog source's options.
func (r *plain) catalogOptions(o *CatalogOptions) bool {
	num := func(dst *int) bool {
		n, ok := r.int()
		*dst = int(n)
		return ok && n >= math.MinInt && n <= math.MaxInt
	}
	return r.fields(func(key string) (uint, bool) {
		var ok bool
		switch key {
		case "descriptionMax":
			return 1 << 0, num(&o.DescriptionMax)
		case "maxLength":
			return 1 << 1, num(&o.MaxLength)
		case "maxSkillBytes":
			return 1 << 2, num(&o.MaxSkillBytes)
		case "listedMax":
			return 1 << 3, num(&o.ListedMax)
		case "search":
			o.Search, ok = r.bool()
			return 1 << 4, ok
		case "updates":
			o.Updates, ok = r.str()
			return 1 << 5, ok
		case "userInvocation":
			o.UserInvocation, ok = r.bool()
			return 1 << 6, ok
		case "resendsPerMinute":
			return 1 << 7, num(&o.ResendsPerMinute)
		case "catalogBytesPerMinute":
			o.CatalogBytesPerMinute, ok = r.int()
			return 1 << 8, ok
		case "catalogRank":
			o.Rank, ok = r.str()
			return 1 << 9, ok
		case "catalogRanking":
			o.Ranking, ok = r.str()
			return 1 << 10, ok
		case "searchBodies":
			o.SearchBodies, ok = r.bool()
			return 1 << 11, ok
		}
		return 0, false
	})
}

// changes reads a change list's changes: maps of name, change and
// perhaps description. An empty list is left to the library.
func (r *plain) changes(dst *[]Change) bool {
	n, ok := r.container(true)
	if !ok || n == 0 || n > len(r.b)-r.i {
		return false
	}
	out := make([]Change, n)
	for i := range out {
		c := &out[i]
		ok := r.fields(func(key string) (uint, bool) {
			var ok bool
			switch key {
			case "name":
				c.Name, ok = r.str()
				return 1 << 0, ok
			case "change":
				c.Change, ok = r.str()
				return 1 << 1, ok
			case "description":
				c.Description, ok = r.str()
				return 1 << 2, ok
			}
			return 0, false
		})
		if !ok {
			return false
		}
	}
	*dst = out
	return true
}

// knownEntries is entries for the lists a worker is sent again and again:
// the entries of the lists read last are kept, by their bytes, and given
// again (shared: they must not be modified) when the same bytes come
// again (knownLists: the least recently used given up past 8 MiB).
func (r *plain) knownEntries(dst *[]Entry) bool {
	start := r.i
	if cached, end, hit := knownLists.get(r.b, start); hit {
		*dst, r.i = cached, end
		return true
	}
	if !r.entries(dst) {
		return false
	}
	knownLists.put(r.b[start:r.i], *dst)
	return true
}

// entries reads a catalog's entries: maps of name and description. An
// empty list is left to the library, which alone says what it reads it as.
// There may be thousands, so keys are compared in place, not made strings,
// and the names and descriptions are not a string each: they are cut out
// of one copy of the list's bytes (its end found first, reading headers
// only), which the entries keep alive.
func (r *plain) entries(dst *[]Entry) bool {
	end, ok := entriesEnd(r.b, r.i)
	if !ok {
		return false
	}
	n, ok := r.container(true)
	if !ok || n == 0 {
		return false
	}
	start := r.i
	back := string(r.b[start:end])
	out := make([]Entry, n)
	for i := range out {
		if !r.entry(&out[i], back, start) {
			return false
		}
	}
	*dst = out
	return true
}

// entry reads one entry's map into e, whose fields become the parts of
// back, a copy of b from offset base, that hold them.
func (r *plain) entry(e *Entry, back string, base int) bool {
	keys, ok := r.container(false)
	if !ok {
		return false
	}
	var seen uint
	for range keys {
		key, ok := r.strBytes()
		if !ok {
			return false
		}
		var bit uint
		var dst *string
		switch string(key) {
		case "name":
			bit, dst = 1<<0, &e.Name
		case "description":
			bit, dst = 1<<1, &e.Description
		}
		if bit == 0 || seen&bit != 0 {
			return false
		}
		seen |= bit
		s, ok := r.strBytes()
		if !ok {
			return false
		}
		at := r.i - len(s) - base
		*dst = back[at : at+len(s)]
	}
	return true
}
