package throttled

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"time"

	"github.com/throttledhq/throttled/config"
)

// DefaultWatchInterval is how often config.watch reads the file.
const DefaultWatchInterval = 5 * time.Second

// ErrNoStore is returned by Reload before the store has been set up.
var ErrNoStore = errors.New("throttled: reload: no config store")

// errStoreDown wraps a reload's error when the store did not answer.
var errStoreDown = errors.New("throttled: reload: the config store does not answer")

// Reload takes a newly loaded configuration file: it validates cfg first
// (a bad one is refused and logged, nothing applied), names the changed
// settings that only a restart applies in one warning, and then with
// config.source: file makes the store hold its tiers, rules and
// assignments (every instance applies them from there); with store it
// logs how the file differs from the store and writes nothing.
func (s *Instance) Reload(ctx context.Context, cfg *config.Config) error {
	if s.src == nil {
		return ErrNoStore
	}
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		s.log.Error("config reload refused: nothing applied", "err", err)
		return fmt.Errorf("throttled: reload: %w", err)
	}
	if changed := restartOnly(s.cfg, cfg); len(changed) > 0 {
		s.log.Warn("config reload: changed settings that take effect only at restart: "+strings.Join(changed, ", "),
			"settings", changed)
	}
	prev := s.src.file.Swap(cfg)
	if err := s.reconcile(ctx); err != nil {
		s.src.file.CompareAndSwap(cfg, prev) // not applied: a later reload tries again
		s.log.Error("config reload: the store does not answer: not applied; config.watch retries, or send SIGHUP again",
			"err", err)
		return fmt.Errorf("%w: %w", errStoreDown, err)
	}
	s.log.Info("config reloaded", "config_source", s.cfg.Source().String())
	return nil
}

// policyKeys are the YAML keys of the file that a reload applies.
var policyKeys = map[string]bool{"tiers": true, "rules": true, "default_tier": true, "anonymous_tier": true,
	"unmatched_tier": true, "assignments": true}

// restartOnly names the settings that differ between the configuration in
// force and next other than those a reload applies, by YAML path (one
// level deep: redis.url, admin.listen).
func restartOnly(cur, next *config.Config) []string {
	var out []string
	a, b := reflect.ValueOf(cur).Elem(), reflect.ValueOf(next).Elem()
	for i := range a.NumField() {
		f := a.Type().Field(i)
		name := yamlName(f)
		if policyKeys[name] || reflect.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			continue
		}
		if f.Type.Kind() != reflect.Struct {
			out = append(out, name)
			continue
		}
		for j := range f.Type.NumField() {
			if !reflect.DeepEqual(a.Field(i).Field(j).Interface(), b.Field(i).Field(j).Interface()) {
				out = append(out, name+"."+yamlName(f.Type.Field(j)))
			}
		}
	}
	return out
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

// ReloadSettings configure RunReloads.
type ReloadSettings struct {
	// Load reads the configuration file again (with the environment's
	// overrides, as at start). Required.
	Load func() (*config.Config, error)
	// Path is the file whose content config.watch compares. Empty: no
	// watching, whatever config.watch says.
	Path string
	// Signals each ask for a reload (serve: SIGHUP).
	Signals <-chan os.Signal
	// Interval is how often config.watch reads the file. Zero:
	// DefaultWatchInterval.
	Interval time.Duration
}

// RunReloads reloads the configuration file on each signal, and with
// config.watch whenever its content changes (content, not mtime: a
// Kubernetes ConfigMap update swaps a symlink), until ctx ends. A file that
// does not load is logged and not applied.
func (s *Instance) RunReloads(ctx context.Context, rs ReloadSettings) error {
	if rs.Load == nil {
		return errors.New("throttled: RunReloads: ReloadSettings.Load is nil")
	}
	if rs.Interval == 0 {
		rs.Interval = DefaultWatchInterval
	}
	var tick <-chan time.Time
	if s.cfg.ConfigSource.Watch && rs.Path != "" {
		t := time.NewTicker(rs.Interval)
		defer t.Stop()
		tick = t.C
	}
	var seen []byte // nil: the first check reads the file, and reloads only if it says something new
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case sig := <-rs.Signals:
			s.log.Info("config reload requested", "signal", fmt.Sprint(sig))
			seen = fileSum(rs.Path)
			_ = s.reloadFile(ctx, rs.Load, "")
		case <-tick:
			sum := fileSum(rs.Path)
			if sum == nil || bytes.Equal(sum, seen) {
				continue // unchanged, or mid-swap: the next tick sees it
			}
			seen = sum
			if errors.Is(s.reloadFile(ctx, rs.Load, rs.Path), errStoreDown) {
				seen = nil // the next tick tries again
			}
		}
	}
}

// reloadFile loads the file and reloads it (errors are logged). For a
// watched path (not "") a file that says what is in force already is left
// alone, silently.
func (s *Instance) reloadFile(ctx context.Context, load func() (*config.Config, error), path string) error {
	cfg, err := load()
	if err != nil {
		s.log.Error("config reload refused: the file does not load; nothing applied", "err", err)
		return err
	}
	if path != "" {
		if cfg.SetDefaults(); reflect.DeepEqual(cfg, s.src.file.Load()) {
			return nil
		}
		s.log.Info("config file changed: reloading", "path", path)
	}
	return s.Reload(ctx, cfg)
}

// fileSum is the SHA-256 of path's content; nil when it cannot be read.
func fileSum(path string) []byte {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	sum := sha256.Sum256(b)
	return sum[:]
}
