package catalog

import (
	"context"
	"time"
)

type arrivalKey struct{}

// WithArrival returns ctx carrying the moment the request it serves
// arrived, taken with time.Now when it was received. Skills looked up under
// ctx then reflect every change completed before that moment (what a client
// that changed a skill and then sent the request must see), and a source of
// skills may share the checks that prove it among requests that arrived
// before one began, instead of checking again for each.
func WithArrival(ctx context.Context, at time.Time) context.Context {
	return context.WithValue(ctx, arrivalKey{}, at)
}

// ArrivalOf returns the arrival ctx carries, or the zero time: changes
// completed before the lookup itself are then to be seen.
func ArrivalOf(ctx context.Context) time.Time {
	at, _ := ctx.Value(arrivalKey{}).(time.Time)
	return at
}
