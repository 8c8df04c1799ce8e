package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/throttledhq/throttled/admin"
	"github.com/throttledhq/throttled/internal/enum"
	"github.com/throttledhq/throttled/internal/wait"
	"github.com/throttledhq/throttled/policy"
)

// SourceConfig says which copy of the tiers, rules, default and anonymous
// tier and key assignments is authoritative (config.source).
type SourceConfig struct {
	// Source is "store" (the default): the file seeds an empty store, the
	// admin API edits the store from then on and later edits of the file
	// are not applied (serve warns once when they differ). "file": the
	// file is authoritative: serve makes the store equal to it at start,
	// and the admin API refuses writes to tiers, rules and assignments
	// (pins stay writable).
	Source string `yaml:"source"`
}

// configSource is config.source.
type configSource uint8

const (
	sourceStore configSource = iota // the store is authoritative
	sourceFile                      // the file is
)

var sourceNames = enum.New[configSource]("config", "config.source", "store", "file")

func (s configSource) String() string { return sourceNames.String(s) }

// source is the configured config.source (validated: store when bad).
func (c *Config) source() configSource {
	s, _ := sourceNames.Parse(c.ConfigSource.Source)
	return s
}

func (c *Config) validateSource() []fieldErr {
	if _, err := sourceNames.Parse(c.ConfigSource.Source); err != nil {
		return []fieldErr{{"config.source", err.Error()}}
	}
	return nil
}

// fileOwns is the admin API's ReadOnly predicate in config.source: file.
func fileOwns(kind string) error {
	if kind == admin.KindPins {
		return nil
	}
	return fmt.Errorf("%s are read-only here: with config.source: file the configuration file is authoritative "+
		"for tiers, rules and key assignments; change the file and restart (multiplier pins stay writable)", kind)
}

// reconcileRetry is how often reconcile is retried while the store does
// not answer.
const reconcileRetry = 2 * time.Second

// startReconcile reconciles file and store now, or, while the store does
// not answer, in the background until it does (logging the first failure
// only).
func (s *stack) startReconcile(ctx context.Context, st policy.Store) {
	err := s.reconcile(ctx, st)
	if err == nil {
		return
	}
	// With Redis down at start, the outage's one actionable line says so; this one is folded into it.
	s.redisLogger().Warn("config file and store not compared yet: the store does not answer; retrying in the background",
		"config_source", s.cfg.source().String(), "err", err)
	s.runners = append(s.runners, func(ctx context.Context) error {
		return wait.Until(ctx, reconcileRetry, func(ctx context.Context) bool { return s.reconcile(ctx, st) == nil })
	})
}

// reconcile brings the file and the store together at start. With
// config.source: file it makes the store equal to the file; with store it
// warns once when they differ. It fails only when the store does not answer.
func (s *stack) reconcile(ctx context.Context, st policy.Store) error {
	file := s.cfg.apiConfig()
	if s.cfg.source() == sourceFile {
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
	if d, err := configDelta(snap.Config, file, "store", "file"); err != nil || d != "" {
		s.log.Warn("the config file's tiers, rules or assignments differ from the store's, which are in force "+
			"(config.source: store): `throttled config diff FILE` shows how; `throttled config import FILE` "+
			"applies the file, config.source: file makes it authoritative", "store_version", snap.Version)
	}
	return nil
}
