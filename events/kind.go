package events

// valueKind is the broad type of a msgpack value, for messages and dispatch.
type valueKind uint8

const (
	kindInvalid valueKind = iota
	kindNil
	kindBool
	kindInt  // signed integer codes (negative fixint, int8..int64)
	kindUint // unsigned integer codes (positive fixint, uint8..uint64)
	kindFloat
	kindString
	kindBinary
	kindArray
	kindMap
	kindExt
)

func (k valueKind) String() string {
	switch k {
	case kindNil:
		return "nil"
	case kindBool:
		return "bool"
	case kindInt, kindUint:
		return "integer"
	case kindFloat:
		return "float"
	case kindString:
		return "string"
	case kindBinary:
		return "binary"
	case kindArray:
		return "array"
	case kindMap:
		return "map"
	case kindExt:
		return "extension"
	}
	return "invalid code"
}

// codeKind classifies the first byte of a msgpack value.
func codeKind(c byte) valueKind {
	switch {
	case c <= 0x7f:
		return kindUint
	case c <= 0x8f:
		return kindMap
	case c <= 0x9f:
		return kindArray
	case c <= 0xbf:
		return kindString
	case c >= 0xe0:
		return kindInt
	}
	switch c {
	case 0xc0:
		return kindNil
	case 0xc2, 0xc3:
		return kindBool
	case 0xc4, 0xc5, 0xc6:
		return kindBinary
	case 0xc7, 0xc8, 0xc9, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return kindExt
	case 0xca, 0xcb:
		return kindFloat
	case 0xcc, 0xcd, 0xce, 0xcf:
		return kindUint
	case 0xd0, 0xd1, 0xd2, 0xd3:
		return kindInt
	case 0xd9, 0xda, 0xdb:
		return kindString
	case 0xdc, 0xdd:
		return kindArray
	case 0xde, 0xdf:
		return kindMap
	}
	return kindInvalid
}

// wrongType reports a field whose value is of type got (a msgpack or JSON
// type name) where want was expected.
func wrongType(field, got, want string) *FieldError {
	return &FieldError{Field: field, Problem: "wrong type: got " + got + ", want " + want}
}
