package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/processor/console"
	"github.com/skillstream/skillstream/processor/supervise"
	"github.com/skillstream/skillstream/providers/store/audit"
)

// Tenants added and removed at run time. serve watches its tenants file
// (supervise.Watch): a tenant added to it is connected to and started
// beside the others, a tenant dropped is stopped (its triggers in flight
// finished) and its connection closed, a tenant whose entry changed is
// stopped and started again; a bad edit is logged and changes nothing.
// Each member watches its own file: an operator adds a tenant by pushing
// its accounts to the resolver and then adding its entry to every
// member's file (or to the one file they share).

// tenantWatch is serve's side of the watch: the tenants it started from
// and those added since, and the accounts they are in.
type tenantWatch struct {
	a       *app
	c       *Config
	log     *slog.Logger
	metrics *prometheus.Registry
	ann     *announcer
	library string        // the library's entry at start
	console *console.Mux  // serve's console (--console-listen), or nil
	entries []tenantEntry // the file's tenants as last loaded (their console tokens must differ)

	mu       sync.Mutex
	units    map[string]*servedUnit
	accounts map[string]string              // account → tenant
	stores   map[string]jetstream.JetStream // account → the tenant's JetStream (the audit service reads its index)
}

// newTenantWatch follows f's tenants, served by units (serve's units at
// start), the library in account libAccount ("" without one).
func (a *app) newTenantWatch(c *Config, log *slog.Logger, f *tenantsFile, units []*servedUnit, libAccount string, metrics *prometheus.Registry, ann *announcer) *tenantWatch {
	w := &tenantWatch{a: a, c: c, log: log, metrics: metrics, ann: ann, library: libraryKey(f),
		units: map[string]*servedUnit{}, accounts: map[string]string{}, stores: map[string]jetstream.JetStream{}}
	for _, u := range units {
		w.units[u.tenant] = u
		w.accounts[u.account] = u.tenant
		w.stores[u.account] = u.js
	}
	if libAccount != "" { // the library's account is no tenant's
		w.accounts[libAccount] = libraryTenant
	}
	return w
}

// tenantKey is an entry's settings, compared across edits of the file.
func tenantKey(e tenantEntry) string {
	b, _ := json.Marshal(e)
	return string(b)
}

func libraryKey(f *tenantsFile) string {
	if f.Library == nil {
		return ""
	}
	b, _ := json.Marshal(f.Library)
	return string(b)
}

// keys are the entries' keys of f.
func tenantKeys(f *tenantsFile) map[string]string {
	out := map[string]string{}
	for _, e := range f.Tenants {
		out[e.Name] = tenantKey(e)
	}
	return out
}

// run watches the file until ctx ends.
func (w *tenantWatch) run(ctx context.Context, sup *supervise.Supervisor, start *tenantsFile) error {
	return sup.Watch(ctx, supervise.WatchConfig{
		Path:    w.c.Tenants,
		Load:    w.load,
		Stopped: w.stopped,
		Logger:  w.log,
		Applied: func(added, removed []string, err error) {
			if err == nil && len(added)+len(removed) > 0 {
				w.log.Info("tenants file applied", "added", added, "removed", removed, "tenants", len(sup.Names()))
			}
		},
	}, tenantKeys(start))
}

// load reads the tenants file as serve's: each tenant a unit to start.
func (w *tenantWatch) load() ([]supervise.Wanted, error) {
	f, err := loadTenants(w.c.Tenants)
	if err != nil {
		return nil, err
	}
	if libraryKey(f) != w.library {
		w.log.Warn("the tenants file's library entry changed: serve reads the library it started with until it is restarted", "file", w.c.Tenants)
	}
	w.mu.Lock()
	w.entries = f.Tenants
	w.mu.Unlock()
	out := make([]supervise.Wanted, len(f.Tenants))
	for i, e := range f.Tenants {
		out[i] = supervise.Wanted{Name: e.Name, Key: tenantKey(e), Make: func() (supervise.Unit, error) { return w.unit(e), nil }}
	}
	return out, nil
}

// unit is the supervised unit of a tenant added at run time: its first
// start connects to the tenant's account (and checks it as serve's start
// does); a failure is retried like any start's.
func (w *tenantWatch) unit(e tenantEntry) supervise.Unit {
	u := &servedUnit{tenant: e.Name, late: supervise.NewLate()}
	u.dial = func(ctx context.Context) error { return w.dial(ctx, u, e) }
	if w.c.MCP.Listen != "" {
		w.log.Warn("a tenant added at run time is not served over MCP until serve restarts", "tenant", e.Name)
	}
	if w.console != nil {
		w.setConsole(u, e)
	}
	w.mu.Lock()
	w.units[e.Name] = u
	w.mu.Unlock()
	w.ann.mu.Lock()
	w.ann.pending++ // its first start counts like those at start
	w.ann.mu.Unlock()
	return w.a.supervisedUnit(w.c, w.log, u, w.metrics, w.ann)
}

// dial connects u to tenant e's account: its own account (no other
// tenant's), with JetStream.
func (w *tenantWatch) dial(ctx context.Context, u *servedUnit, e tenantEntry) error {
	nc, err := w.c.connectTenant(w.log, e.Name, e.tenantAuth)
	if err != nil {
		return err
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	account, err := accountOf(actx, nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("tenant %s: %w", e.Name, err)
	}
	w.mu.Lock()
	other, taken := w.accounts[account]
	if !taken {
		w.accounts[account] = e.Name
	}
	w.mu.Unlock()
	if taken && other != e.Name {
		nc.Close()
		return supervise.Permanent(fmt.Errorf("tenants %s and %s are both in account %s: each tenant needs an account of its own (its sessions and skills are kept there)", other, e.Name, account))
	}
	js, err := jetstream.New(nc)
	if err == nil {
		_, err = js.AccountInfo(actx)
	}
	if err != nil {
		nc.Close()
		w.mu.Lock()
		delete(w.accounts, account)
		w.mu.Unlock()
		if errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
			return fmt.Errorf("tenant %s: account %s has no JetStream: enable it for the account (its sessions and skill store live there)", e.Name, account)
		}
		return fmt.Errorf("tenant %s: JetStream of account %s: %w", e.Name, account, err)
	}
	if e.MCPTokenEnv != "" {
		u.mcpToken = os.Getenv(e.MCPTokenEnv)
	}
	u.nc, u.js, u.account = nc, js, account
	w.mu.Lock()
	w.stores[account] = js
	w.mu.Unlock()
	u.conn = tenantConn{name: e.Name, nc: nc, js: js, account: account, mcpToken: u.mcpToken, maxBytes: e.maxBytes, workers: e.Workers, rate: e.MaxTriggerRate}
	return nil
}

// stopped releases a tenant's connection and registry once its unit
// stopped (dropped from the file, or changed).
func (w *tenantWatch) stopped(name string) {
	w.mu.Lock()
	u := w.units[name]
	delete(w.units, name)
	if u != nil && u.account != "" && w.accounts[u.account] == name {
		delete(w.accounts, u.account)
		delete(w.stores, u.account)
	}
	w.mu.Unlock()
	if w.console != nil {
		w.console.Remove(name)
	}
	if u == nil {
		return
	}
	if u.nc != nil {
		u.nc.Close()
	}
	u.close(w.log)
}

// close releases every tenant added at run time and still served (at
// serve's end, after the processors stopped).
func (w *tenantWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, u := range w.units {
		if u.dial == nil {
			continue // serve's own, released by serve
		}
		if u.nc != nil {
			u.nc.Close()
		}
		u.close(w.log)
	}
}

// supervisedUnit is u as the supervisor starts it: connected first when
// it was added at run time, then startUnit.
func (a *app) supervisedUnit(c *Config, log *slog.Logger, u *servedUnit, metrics *prometheus.Registry, ann *announcer) supervise.Unit {
	return supervise.Unit{Name: u.tenant,
		Start: func(ctx context.Context) (supervise.Serving, error) {
			if u.nc == nil && u.dial != nil {
				if err := u.dial(ctx); err != nil {
					return nil, err
				}
			}
			r, err := a.startUnit(ctx, c, log, u, metrics, ann.ready)
			if err != nil {
				return nil, err
			}
			return r, nil
		},
		Failed: func(error) { ann.failed(u) }}
}

// auditIndex is the audit service's way to every store it audits: each
// tenant served now, and the library (lib, nil without one).
func (w *tenantWatch) auditIndex(bucket string, lib *tenantConn, f *tenantsFile) func(string) (audit.Index, bool) {
	return func(account string) (audit.Index, bool) {
		if lib != nil && account == lib.account {
			return audit.Index{JS: lib.js, Bucket: f.Library.Bucket}, true
		}
		w.mu.Lock()
		js := w.stores[account]
		w.mu.Unlock()
		if js == nil {
			return audit.Index{}, false
		}
		return audit.Index{JS: js, Bucket: bucket}, true
	}
}
