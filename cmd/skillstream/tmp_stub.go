package main

import (
	"context"
	"errors"

	"github.com/skillstream/skillstream/providers"
)

func newBundled() (providers.Provider, error) { return nil, errors.New("bundled: not yet") }

func (a *app) demoCommand() (*command, runFunc) {
	return newCommand("demo", "skillstream demo", "", "  x"), func(context.Context, []string) error { return nil }
}
