package events

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// triggerSeeds are trigger payloads of the plain shape and of every shape
// next to it that the fast path must leave to the library.
func triggerSeeds(t testing.TB) [][]byte {
	enc := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var seeds [][]byte
	for _, name := range []string{"prestep.msgpack", "skillcall.msgpack"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, b)
	}
	tool := map[string]any{"name": "skill", "owner": "skillstream"}
	pre := func(change func(m map[string]any)) []byte {
		m := map[string]any{"v": 1, "session": "s-1", "step": "7", "cwd": "/work", "tools": []any{tool},
			"deadlineMs": 1700000000000, "project": "p", "resourceDir": "/r"}
		change(m)
		return enc(m)
	}
	call := func(change func(m map[string]any)) []byte {
		m := map[string]any{"v": 1, "session": "s-1", "call": "c-1", "cwd": "/work", "args": map[string]any{"name": "a-skill"},
			"deadlineMs": 5}
		change(m)
		return enc(m)
	}
	for _, change := range []func(map[string]any){
		func(map[string]any) {},
		func(m map[string]any) { delete(m, "v") },
		func(m map[string]any) { m["v"] = 2 },
		func(m map[string]any) { m["v"] = -1 },
		func(m map[string]any) { m["v"] = uint64(math.MaxUint64) },
		func(m map[string]any) { m["v"] = nil },
		func(m map[string]any) { m["userText"] = []any{"/pdf go", "and /docx"} },
		func(m map[string]any) { m["userText"] = []any{} },
		func(m map[string]any) { m["userText"] = []any{"a", 1} },
		func(m map[string]any) { m["userText"] = "/pdf" },
		func(m map[string]any) { m["userText"] = []any{nil} },
		func(m map[string]any) { m["userText"] = []any{"/pdf\x07"} },
		func(m map[string]any) { m["v"] = 1.0 },
		func(m map[string]any) { m["session"] = nil },
		func(m map[string]any) { m["session"] = []byte("s-1") },
		func(m map[string]any) { m["session"] = "bad session" },
		func(m map[string]any) { m["step"], m["call"] = 12, 12 },
		func(m map[string]any) { m["cwd"] = 3 },
		func(m map[string]any) { delete(m, "cwd") },
		func(m map[string]any) { m["deadlineMs"] = -5 },
		func(m map[string]any) { m["deadlineMs"] = uint64(math.MaxInt64) + 1 },
		func(m map[string]any) { m["deadlineMs"] = int8(-3) },
		func(m map[string]any) { m["deadlineMs"] = int16(-300) },
		func(m map[string]any) { m["deadlineMs"] = int32(-70000) },
		func(m map[string]any) { m["deadlineMs"] = int64(-5e9) },
		func(m map[string]any) { m["deadlineMs"] = uint16(60000) },
		func(m map[string]any) { m["deadlineMs"] = uint32(4e9) },
		func(m map[string]any) { m["v"] = int16(1) },
		func(m map[string]any) { m["extra"] = []int{1} },
		func(m map[string]any) { m["tools"] = []any{} },
		func(m map[string]any) { m["tools"] = nil },
		func(m map[string]any) { m["tools"] = []any{nil} },
		func(m map[string]any) { m["tools"] = []any{map[string]any{"name": "x", "owner": "y", "more": 1}} },
		func(m map[string]any) { m["tools"] = []any{map[string]any{"name": "x"}} },
		func(m map[string]any) { m["tools"] = map[string]any{} },
		func(m map[string]any) { m["args"] = map[string]any{} },
		func(m map[string]any) { m["args"] = nil },
		func(m map[string]any) { m["args"] = map[string]any{"name": "a", "other": 1} },
		func(m map[string]any) { m["args"] = map[string]any{"name": nil} },
		func(m map[string]any) { delete(m, "args") },
		func(m map[string]any) { m["minStoreRevision"] = 7 },
		func(m map[string]any) { m["minStoreRevision"] = uint32(4e9) },
		func(m map[string]any) { m["minStoreRevision"] = uint64(math.MaxUint64) },
		func(m map[string]any) { m["minStoreRevision"] = -1 },
		func(m map[string]any) { m["minStoreRevision"] = nil },
		func(m map[string]any) { m["minStoreRevision"] = "7" },
		func(m map[string]any) { m["minStoreRevision"] = 1.5 },
	} {
		seeds = append(seeds, pre(change), call(change))
	}
	// A key twice, and a payload cut short.
	seeds = append(seeds,
		[]byte{0x82, 0xa1, 'v', 0x01, 0xa1, 'v', 0x01},
		[]byte{0x82, 0xa1, 'v', 0x01, 0xa7, 's', 'e', 's', 's', 'i', 'o', 'n'})
	return seeds
}

// decodeTriggerBothWays decodes b as a pre-step and as a skill call with the
// fast path on and off, and describes any difference.
func decodeTriggerBothWays(b []byte) string {
	defer func() { fastDecoding = true }()
	for _, dec := range []func([]byte) (any, error){
		func(b []byte) (any, error) { return DecodePreStep(Msgpack, b) },
		func(b []byte) (any, error) { return DecodeSkillCall(Msgpack, b) },
	} {
		fastDecoding = true
		fv, ferr := dec(b)
		fastDecoding = false
		sv, serr := dec(b)
		if fmt.Sprint(ferr) != fmt.Sprint(serr) || !reflect.DeepEqual(fv, sv) {
			return fmt.Sprintf("%x: fast %#v, %v; library %#v, %v", b, fv, ferr, sv, serr)
		}
	}
	return ""
}

// The fast path gives what the library gives, for the plain shape and for
// every shape next to it.
func TestFastTriggersMatchLibrary(t *testing.T) {
	for _, b := range triggerSeeds(t) {
		if diff := decodeTriggerBothWays(b); diff != "" {
			t.Error(diff)
		}
	}
}

// The fast path does take the plain shape (else it would only cost).
func TestFastTriggersTakePlainShape(t *testing.T) {
	seeds := triggerSeeds(t)
	var p preStepWire
	var c skillCallWire
	if !p.fastMsgpack(seeds[0]) || p.Session == "" || len(p.Tools) == 0 {
		t.Errorf("pre-step fixture not taken: %+v", p)
	}
	if !c.fastMsgpack(seeds[1]) || c.Args == nil || c.Args.Name == nil {
		t.Errorf("skill call fixture not taken: %+v", c)
	}
	if p.fastMsgpack(seeds[1]) || c.fastMsgpack(seeds[0]) {
		t.Error("a payload of the other kind was taken")
	}
}

func FuzzFastTriggers(f *testing.F) {
	for _, b := range triggerSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if diff := decodeTriggerBothWays(b); diff != "" {
			t.Fatal(diff)
		}
	})
}

// The triggers' own unwrap does what the reflective unwrap does.
func TestTriggerUnwrapMatchesReflection(t *testing.T) {
	v := 3
	p := preStepWire{V: &v, Step: "12", PreStep: PreStep{Session: "s", Step: "other", Tools: []Tool{{Name: "n"}}}}
	p2 := p
	gp, gv := p.unwrap()
	wp, wv := unwrap[PreStep](reflect.ValueOf(&p2).Elem())
	if !reflect.DeepEqual(*gp, *wp) || gv != wv {
		t.Errorf("pre-step: %+v %v, want %+v %v", *gp, gv, *wp, wv)
	}
	c := skillCallWire{Call: "9", SkillCall: SkillCall{Session: "s", V: 7}}
	c2 := c
	gc, gcv := c.unwrap()
	wc, wcv := unwrap[SkillCall](reflect.ValueOf(&c2).Elem())
	if !reflect.DeepEqual(*gc, *wc) || gcv != wcv || gc.V != 0 {
		t.Errorf("skill call: %+v %v, want %+v %v", *gc, gcv, *wc, wcv)
	}
}
