package catalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

func TestOptionsValidate(t *testing.T) {
	for _, n := range []int{3, 4, 50, 500, 1 << 20} {
		if err := (catalog.Options{DescriptionMaxLength: n}).Validate(); err != nil {
			t.Errorf("max length %d: unexpected error %v", n, err)
		}
	}
	for _, n := range []int{2, 1, 0, -1, -500} {
		err := (catalog.Options{DescriptionMaxLength: n}).Validate()
		if err == nil {
			t.Errorf("max length %d: no error", n)
			continue
		}
		if !errors.Is(err, catalog.ErrInvalidOptions) {
			t.Errorf("max length %d: error %v does not wrap ErrInvalidOptions", n, err)
		}
		if !strings.Contains(err.Error(), "greater than or equal to 3") {
			t.Errorf("max length %d: error %q does not say \"greater than or equal to 3\"", n, err)
		}
	}
	if err := (catalog.Options{}).Validate(); err == nil {
		t.Error("the zero Options validated")
	}
	if o := catalog.DefaultOptions(); o.DescriptionMaxLength != 500 || o.Validate() != nil {
		t.Errorf("DefaultOptions = %+v, want a valid cap of 500", o)
	}
}
