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

func TestOptionsSizeLimits(t *testing.T) {
	base := catalog.DefaultOptions()
	if base.MaxLength != 24000 || base.MaxSkillBytes != 262144 {
		t.Errorf("defaults %+v, want 24000 and 262144", base)
	}
	for _, tc := range []struct {
		maxLen, maxBytes int
		want             string // "" = valid
	}{
		{0, 0, ""},
		{200, 1024, ""},
		{199, 1024, "must be 0 or at least 200"},
		{-1, 1024, "must be 0 or at least 200"},
		{200, 1023, "must be 0 or at least 1024"},
		{200, -5, "must be 0 or at least 1024"},
	} {
		o := base
		o.MaxLength, o.MaxSkillBytes = tc.maxLen, tc.maxBytes
		err := o.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%d/%d: unexpected error %v", tc.maxLen, tc.maxBytes, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, catalog.ErrInvalidOptions)):
			t.Errorf("%d/%d: error %v, want one containing %q", tc.maxLen, tc.maxBytes, err, tc.want)
		}
	}
}
