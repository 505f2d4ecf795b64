package catalog

import (
	"errors"
	"fmt"
)

// DefaultDescriptionMaxLength is the description cap used when the operator
// configures none.
const DefaultDescriptionMaxLength = 500

// MinDescriptionMaxLength is the smallest admissible description cap: a
// truncated description keeps max-3 code points and appends "...", so a cap
// below three would leave no room for the ellipsis.
const MinDescriptionMaxLength = 3

// ErrInvalidOptions reports a catalog configuration that cannot be used.
var ErrInvalidOptions = errors.New("invalid catalog options")

// Options configure how the catalog is rendered. The zero value is invalid;
// start from DefaultOptions.
type Options struct {
	// DescriptionMaxLength caps every catalog description, in Unicode code
	// points, after whitespace is collapsed (flag
	// --catalog-description-max-length). It must be at least 3.
	DescriptionMaxLength int
}

// DefaultOptions returns the options used when nothing is configured.
func DefaultOptions() Options {
	return Options{DescriptionMaxLength: DefaultDescriptionMaxLength}
}

// Validate reports an error wrapping ErrInvalidOptions when the options
// cannot be used. It is meant to run once, at startup.
func (o Options) Validate() error {
	if o.DescriptionMaxLength < MinDescriptionMaxLength {
		return fmt.Errorf("%w: catalog description max length is %d, it must be an integer greater than or equal to %d",
			ErrInvalidOptions, o.DescriptionMaxLength, MinDescriptionMaxLength)
	}
	return nil
}
