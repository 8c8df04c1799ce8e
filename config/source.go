package config

import (
	"fmt"

	"github.com/throttledhq/throttled/admin"
	"github.com/throttledhq/throttled/internal/enum"
)

// SourceConfig says which copy of the tiers, rules, default and anonymous
// tier and key assignments is authoritative (config.source).
type SourceConfig struct {
	// Source is "store" (the default): the file seeds an empty store, the
	// admin API edits the store from then on and later edits of the file
	// are not applied (serve warns when they differ, at start and on each
	// reload). "file": the file is authoritative: serve makes the store
	// equal to it at start and on each reload (SIGHUP, config.watch), and
	// the admin API refuses writes to tiers, rules and assignments (pins
	// stay writable).
	Source string `yaml:"source"`
	// Watch (config.watch) re-reads the file when its content changes
	// (checked every 5 s), as SIGHUP does: content, not mtime, since a
	// Kubernetes ConfigMap update swaps a symlink.
	Watch bool `yaml:"watch"`
}

// Source is config.source.
type Source uint8

const (
	SourceStore Source = iota // the store is authoritative
	SourceFile                // the file is
)

var sourceNames = enum.New[Source]("config", "config.source", "store", "file")

func (s Source) String() string { return sourceNames.String(s) }

// source is the configured config.source (validated: store when bad).
func (c *Config) Source() Source {
	s, _ := sourceNames.Parse(c.ConfigSource.Source)
	return s
}

func (c *Config) validateSource() []fieldErr {
	if _, err := sourceNames.Parse(c.ConfigSource.Source); err != nil {
		return []fieldErr{{"config.source", err.Error()}}
	}
	return nil
}

// FileOwns is the admin API's ReadOnly predicate in config.source: file.
func FileOwns(kind string) error {
	if kind == admin.KindPins {
		return nil
	}
	return fmt.Errorf("%s are read-only here: with config.source: file the configuration file is authoritative "+
		"for tiers, rules and key assignments; change the file and reload it (SIGHUP) (multiplier pins stay writable)", kind)
}
