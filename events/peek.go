package events

import (
	"encoding/json"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// PeekString reads the string field named field of a payload that is a map
// (msgpack or JSON), ignoring every other field and the payload's version:
// the lenient read of records whose full shape a reader does not need (for
// instance a kind added after the reader was built). A payload that is not
// a map, or whose field is absent or not a string, is an error matching
// ErrBadPayload.
func PeekString(enc Encoding, b []byte, field string) (string, error) {
	var m map[string]any
	var err error
	if enc == JSON {
		err = json.Unmarshal(b, &m)
	} else {
		err = msgpack.Unmarshal(b, &m)
	}
	if err != nil || m == nil {
		return "", fmt.Errorf("%w: not a map", ErrBadPayload)
	}
	s, ok := m[field].(string)
	if !ok {
		return "", fmt.Errorf("%w: field %q: absent or not a string", ErrBadPayload, field)
	}
	return s, nil
}
