package events

import (
	"strings"
	"testing"
)

func TestUsageSummary(t *testing.T) {
	body := splitSample(t)
	data, err := body.Encode("s1", "1", "i")
	if err != nil {
		t.Fatal(err)
	}
	parts, ok := SplitCatalog(data)
	if !ok {
		t.Fatal("no split")
	}
	sum := body.UsageSummary()
	if sum.Body != CatalogBodyKey(parts.Body) || sum.Update != "initial" || sum.TextBytes != int64(len(body.text)) {
		t.Fatalf("summary %+v does not describe the record's body", sum)
	}
	got, err := ParseUsageSummary(sum.Header())
	if err != nil || got != sum {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if u := (UsageSummary{Kind: UsageLoad, Skill: strings.Repeat("x", MaxUsageSummary)}).Header(); u != "" {
		t.Fatalf("an over-long summary is written: %d bytes", len(u))
	}
	for _, bad := range []string{"", "{", `{"k":"catalog"}`, `{"k":"load"}`, `{"k":"other","s":"x"}`, `{"k":"catalog","u":"initial","b":"k","t":-1}`, strings.Repeat(" ", MaxUsageSummary+1)} {
		if _, err := ParseUsageSummary(bad); err == nil {
			t.Errorf("%q parses", bad)
		}
	}
	tomb, _ := NewCatalogBody("", CatalogSource{Update: "replacement"})
	if u := tomb.UsageSummary().Update; u != "tombstone" {
		t.Errorf("a replacement listing nothing is %q", u)
	}
}

func FuzzParseUsageSummary(f *testing.F) {
	f.Add(`{"k":"load","s":"pdf","d":"sha256:ab","r":3}`)
	f.Add(`{"k":"catalog","u":"changes","t":12,"b":"00ff"}`)
	f.Add(`{"k":1}`)
	f.Fuzz(func(t *testing.T, h string) {
		u, err := ParseUsageSummary(h)
		if err != nil {
			return
		}
		back := u.Header()
		if back == "" {
			return // valid, yet longer once written again (escapes)
		}
		v, err := ParseUsageSummary(back)
		if err != nil || v != u {
			t.Fatalf("%q parses as %+v, written again as %q: %+v, %v", h, u, back, v, err)
		}
	})
}
