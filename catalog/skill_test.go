package catalog_test

import (
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

func TestResourceBaseWhere(t *testing.T) {
	for _, c := range []struct {
		rb   catalog.ResourceBase
		want string
	}{
		{catalog.ResourceBase{Kind: catalog.ResourceDirectory, Path: "/skills/a", URL: "x"}, "/skills/a"},
		{catalog.ResourceBase{Kind: catalog.ResourceURL, URL: "https://example.test/a"}, "https://example.test/a"},
		{catalog.ResourceBase{Kind: catalog.ResourceOpaque, Description: "in the vault"}, "(in the vault)"},
		{catalog.ResourceBase{Kind: "other", Path: "/p"}, ""},
	} {
		if got := c.rb.Where(); got != c.want {
			t.Errorf("%+v: Where = %q, want %q", c.rb, got, c.want)
		}
	}
}
