package bundled_test

import (
	"testing"
	"testing/fstest"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/bundled"
	"github.com/skillstream/skillstream/providers/providertest"
)

func TestConformance(t *testing.T) {
	providertest.Run(t, func(t *testing.T, seeds []providertest.Seed) providertest.Harness {
		fsys := fstest.MapFS{}
		for _, s := range seeds {
			fsys[s.Name+"/SKILL.md"] = &fstest.MapFile{Data: []byte(
				"---\nname: " + s.Name + "\ndescription: \"" + s.Description + "\"\n---\n" + s.Body + "\n")}
		}
		p, err := bundled.New(bundled.WithFS(fsys))
		if err != nil {
			t.Fatal(err)
		}
		return providertest.Harness{Provider: p, Query: catalog.At("/anywhere")}
	})
}
