package supervise

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Wanted is a unit a configuration names.
type Wanted struct {
	Name string
	// Key is the unit's settings as the configuration gives them: a unit
	// whose key changes is stopped and started again with the new ones.
	Key string
	// Make builds the unit (called when it is added or changed).
	Make func() (Unit, error)
}

// WatchConfig is what Watch follows.
type WatchConfig struct {
	// Path is the configuration file. Its folder is watched, so that a
	// file replaced by a rename (an editor's save, a mounted ConfigMap's
	// update) is seen like one written in place.
	Path string
	// Load reads the file: the units it names. An error (a bad edit)
	// changes nothing: it is logged and the running units serve on.
	Load func() ([]Wanted, error)
	// Stopped, when set, is called once a unit dropped from the file (or
	// changed) has stopped: release what it held.
	Stopped func(name string)
	// Applied, when set, is called after each reading of the file with
	// what was added and removed, or why nothing was.
	Applied func(added, removed []string, err error)
	// Settle is how long the file must be quiet before it is read
	// (default 200 ms): a save in several writes is read once.
	Settle time.Duration
	// StopTimeout bounds the wait for a removed unit to stop (default 1 min).
	StopTimeout time.Duration
	Logger      *slog.Logger
}

// Watch keeps the supervisor's units those the file names until ctx
// ends: a unit added to the file is added (and started), one dropped is
// removed (stopped gracefully), one whose Key changed is removed and added
// again. current are the units the supervisor was made with, and their
// keys. A file that cannot be read or checked, or names no unit, changes
// nothing and is logged; the next edit is read again.
func (s *Supervisor) Watch(ctx context.Context, cfg WatchConfig, current map[string]string) error {
	if cfg.Settle <= 0 {
		cfg.Settle = 200 * time.Millisecond
	}
	if cfg.StopTimeout <= 0 {
		cfg.StopTimeout = time.Minute
	}
	log := cfg.Logger
	if log == nil {
		log = s.log
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watch %s: %w", cfg.Path, err)
	}
	defer w.Close()
	path, err := filepath.Abs(cfg.Path)
	if err != nil {
		return fmt.Errorf("watch %s: %w", cfg.Path, err)
	}
	dir := filepath.Dir(path)
	if err := w.Add(dir); err != nil {
		return fmt.Errorf("watch %s: %w", dir, err)
	}
	keys := maps(current)
	// One look at the file once it is watched: an edit made after the
	// caller read it (current) and before the watch began has no event.
	settle := time.NewTimer(cfg.Settle)
	defer settle.Stop()
	first := true
	for {
		select {
		case <-ctx.Done():
			return nil
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("watch: the file watcher stopped")
			}
			log.Warn("watching the configuration file", "file", path, "err", err)
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("watch: the file watcher stopped")
			}
			// The file itself, or (a mounted ConfigMap) the link
			// swapped under it.
			if filepath.Clean(ev.Name) == path || filepath.Base(ev.Name) == "..data" {
				settle.Reset(cfg.Settle)
			}
		case <-settle.C:
			added, removed, err := s.apply(ctx, cfg, keys, log)
			if err != nil {
				log.Error("configuration file not applied: the running units serve on as before", "file", path, "err", err)
			}
			quiet := first && err == nil && len(added) == 0 && len(removed) == 0 // the first look found it as read
			first = false
			if cfg.Applied != nil && !quiet {
				cfg.Applied(added, removed, err)
			}
		}
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// apply reads the file and makes the units those it names; keys are the
// running units' keys, updated.
func (s *Supervisor) apply(ctx context.Context, cfg WatchConfig, keys map[string]string, log *slog.Logger) (added, removed []string, err error) {
	want, err := cfg.Load()
	if err != nil {
		return nil, nil, err
	}
	if len(want) == 0 {
		return nil, nil, errors.New("it names no unit")
	}
	byName := map[string]Wanted{}
	for _, w := range want {
		if _, dup := byName[w.Name]; dup {
			return nil, nil, fmt.Errorf("%q is named twice", w.Name)
		}
		byName[w.Name] = w
	}
	var drop, add []string
	for name, key := range keys {
		if w, ok := byName[name]; !ok || w.Key != key {
			drop = append(drop, name)
		}
	}
	for _, w := range want {
		if k, ok := keys[w.Name]; !ok || k != w.Key {
			add = append(add, w.Name)
		}
	}
	slices.Sort(drop)
	var errs []error
	for _, name := range drop {
		log.Info("unit removed from the configuration file: stopping it, finishing what it has in flight", "tenant", name)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.StopTimeout)
		err := s.Remove(rctx, name)
		cancel()
		if err != nil && !errors.Is(err, ErrUnknownUnit) {
			errs = append(errs, err)
		}
		delete(keys, name)
		if cfg.Stopped != nil {
			cfg.Stopped(name)
		}
		log.Info("unit stopped", "tenant", name)
		if _, again := byName[name]; !again {
			removed = append(removed, name)
		}
	}
	for _, name := range add {
		w := byName[name]
		u, err := w.Make()
		if err == nil && u.Name != name {
			err = fmt.Errorf("made unit %q for %q", u.Name, name)
		}
		if err == nil {
			err = s.Add(u)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
			continue
		}
		keys[name] = w.Key
		added = append(added, name)
		log.Info("unit added from the configuration file: starting it", "tenant", name)
	}
	return added, removed, errors.Join(errs...)
}
