package throttled

import (
	"context"
	"errors"
	"time"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/wait"
	"github.com/throttledhq/throttled/policy"
)

// reconcileRetry is how often reconcile is retried while the store does
// not answer.
const reconcileRetry = 2 * time.Second

// startReconcile reconciles file and store now, or, while the store does
// not answer, in the background until it does (logging the first failure
// only).
func (s *Instance) startReconcile(ctx context.Context, st policy.Store) {
	err := s.reconcile(ctx, st)
	if err == nil {
		return
	}
	// With Redis down at start, the outage's one actionable line says so; this one is folded into it.
	s.redisLogger().Warn("config file and store not compared yet: the store does not answer; retrying in the background",
		"config_source", s.cfg.Source().String(), "err", err)
	s.runners = append(s.runners, func(ctx context.Context) error {
		return wait.Until(ctx, reconcileRetry, func(ctx context.Context) bool { return s.reconcile(ctx, st) == nil })
	})
}

// reconcile brings the file and the store together at start. With
// config.source: file it makes the store equal to the file; with store it
// warns once when they differ. It fails only when the store does not answer.
func (s *Instance) reconcile(ctx context.Context, st policy.Store) error {
	file := s.cfg.Policy()
	if s.cfg.Source() == config.SourceFile {
		snap, wrote, err := policy.Replace(ctx, st, file, policy.ReplaceSettings{Force: true,
			Who: "config.source: file"})
		if err != nil {
			return err
		}
		if wrote {
			s.log.Info("config.source: file: the store now holds the file's tiers, rules and assignments", "version", snap.Version)
		}
		return nil
	}
	snap, err := policy.Load(ctx, st)
	switch {
	case err != nil && snap.Version == 0:
		return err
	case snap.Version == 0: // the admin API seeds it from the file once it answers
		return errors.New("config store not seeded yet")
	}
	if d, err := config.PolicyDelta(snap.Config, file, "store", "file"); err != nil || d != "" {
		s.log.Warn("the config file's tiers, rules or assignments differ from the store's, which are in force "+
			"(config.source: store): `throttled config diff FILE` shows how; `throttled config import FILE` "+
			"applies the file, config.source: file makes it authoritative", "store_version", snap.Version)
	}
	return nil
}
