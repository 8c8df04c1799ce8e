package throttled

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/wait"
	"github.com/throttledhq/throttled/policy"
)

// reconcileRetry is how often reconcile is retried while the store does
// not answer.
const reconcileRetry = 2 * time.Second

// fileWriter is the audit "who" of the writes file mode makes.
const fileWriter = "config.source: file"

// configSource is the instance's side of config.source: the file's
// configuration (at start, then each reload), the store it is compared
// with, and throttled_config_drift.
type configSource struct {
	mu      sync.Mutex // one reconcile or reload at a time
	file    atomic.Pointer[config.Config]
	st      policy.Store
	owner   *ownerRecord // nil: the embedded store, nobody else to tell
	drift   prometheus.Gauge
	written *policy.Config // what file mode last made the store hold; nil: nothing yet
	wroteAt int64          // its store version: the watcher's older deliveries are stale
	warned  int64          // the store version whose drift was last logged
}

func (s *Instance) newConfigSource(st policy.Store) error {
	c := &configSource{st: st, drift: prometheus.NewGauge(prometheus.GaugeOpts{Name: "throttled_config_drift",
		Help: "1 while the configuration file's tiers, rules and assignments differ from the store's, else 0 " +
			"(source: the instance's config.source; with file, the store was written around the file).",
		ConstLabels: prometheus.Labels{"source": s.cfg.Source().String()}})}
	if s.rdb != nil {
		c.owner = newOwnerRecord(s.rdb, s.cfg.Redis.Prefix)
	}
	c.file.Store(s.cfg)
	s.src = c
	return s.reg.Register(c.drift)
}

// filePolicy is the file's tiers, rules and assignments as last loaded.
func (c *configSource) filePolicy() policy.Config { return c.file.Load().Policy() }

// startReconcile reconciles file and store now, or, while the store does
// not answer, in the background until it does (logging the first failure
// only).
func (s *Instance) startReconcile(ctx context.Context) {
	err := s.reconcile(ctx)
	if err == nil {
		return
	}
	// With Redis down at start, the outage's one actionable line says so; this one is folded into it.
	s.redisLogger().Warn("config file and store not compared yet: the store does not answer; retrying in the background",
		"config_source", s.cfg.Source().String(), "err", err)
	s.runners = append(s.runners, func(ctx context.Context) error {
		return wait.Until(ctx, reconcileRetry, func(ctx context.Context) bool { return s.reconcile(ctx) == nil })
	})
}

// reconcile brings the file and the store together, at start and on each
// reload. With config.source: file it makes the store equal to the file
// (warning with the diff when that overwrites changes made around the
// file) and records this instance as the store's owner; with store it
// warns when they differ. It fails only when the store does not answer.
func (s *Instance) reconcile(ctx context.Context) error {
	c := s.src
	c.mu.Lock()
	defer c.mu.Unlock()
	file := c.filePolicy()
	if s.cfg.Source() != config.SourceFile {
		return s.compareStore(ctx, file)
	}
	cur, err := policy.Load(ctx, c.st)
	if err != nil && !errors.Is(err, policy.ErrBadStored) {
		return err
	}
	snap, wrote, err := policy.Replace(ctx, c.st, file, policy.ReplaceSettings{Force: true, Who: fileWriter})
	if err != nil {
		return err
	}
	if wrote {
		diff, _ := config.PolicyDelta(cur.Config, file, "store", "file")
		if cur.Version > 0 && c.aroundFile(cur) {
			s.log.Warn(fileWriter+": the file overwrote changes made around it (admin API or config import)",
				"replaced_by", cur.UpdatedBy, "version", snap.Version, "diff", diff)
		} else {
			s.log.Info(fileWriter+": the store now holds the file's tiers, rules and assignments",
				"version", snap.Version, "diff", diff)
		}
	}
	c.written, c.wroteAt = &file, snap.Version
	c.drift.Set(0)
	if c.owner != nil {
		return c.owner.claim(ctx)
	}
	return nil
}

// aroundFile reports whether the stored cur was written around the file:
// not what file mode last wrote (or, before it wrote, not by file mode).
func (c *configSource) aroundFile(cur policy.Snapshot) bool {
	if c.written == nil {
		return cur.UpdatedBy != fileWriter
	}
	return differ(cur.Config, *c.written)
}

// compareStore is store mode's reconcile: warn when the file differs from
// the store, which is in force, and write nothing. A store-mode instance
// also clears a file mode owner's record: the fleet follows the store now.
func (s *Instance) compareStore(ctx context.Context, file policy.Config) error {
	snap, err := policy.Load(ctx, s.src.st)
	switch {
	case err != nil && snap.Version == 0:
		return err
	case snap.Version == 0: // the admin API seeds it from the file once it answers
		return errors.New("config store not seeded yet")
	}
	if s.src.owner != nil {
		if err := s.src.owner.clear(ctx); err != nil {
			return err
		}
	}
	if d, err := config.PolicyDelta(snap.Config, file, "store", "file"); err != nil || d != "" {
		s.src.drift.Set(1)
		s.log.Warn("the config file's tiers, rules or assignments differ from the store's, which are in force "+
			"(config.source: store): `throttled config diff FILE` shows how; `throttled config import FILE` "+
			"applies the file, config.source: file makes it authoritative", "store_version", snap.Version, "diff", d)
		return nil
	}
	s.src.drift.Set(0)
	return nil
}

// onStored is the watcher's callback: it applies a stored configuration
// and compares it with the file. In file mode a store that differs was
// written around the file (config import --force, or an instance in store
// mode): it is logged once per version with the diff, and stays until the
// next reload or restart puts the file back.
func (s *Instance) onStored(snap policy.Snapshot) {
	s.apply(snap)
	c := s.src
	c.mu.Lock()
	defer c.mu.Unlock()
	if snap.Version < c.wroteAt {
		return // delivered late: reconcile has written since
	}
	file := c.filePolicy()
	if !differ(snap.Config, file) {
		c.drift.Set(0)
		return
	}
	if s.cfg.Source() == config.SourceFile && c.warned != snap.Version {
		c.warned = snap.Version
		d, _ := config.PolicyDelta(file, snap.Config, "file", "store")
		s.log.Warn(fileWriter+": the store was changed around the file and is in force until the next reload "+
			"(SIGHUP) or restart, which puts the file back", "version", snap.Version, "by", snap.UpdatedBy, "diff", d)
	}
	c.drift.Set(1) // after the log line: whoever sees the gauge finds the diff logged
}

// differ reports whether two configurations say different things.
func differ(a, b policy.Config) bool {
	d, err := config.PolicyDelta(a, b, "a", "b")
	return err != nil || d != ""
}
