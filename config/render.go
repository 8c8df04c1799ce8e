package config

import (
	"fmt"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/throttledhq/throttled/internal/textdiff"
	"github.com/throttledhq/throttled/policy"
)

// RenderPolicy is the YAML of the part of the configuration file the store
// holds, in the file's layout: what export writes and diff compares, so
// that spellings the same values share ("1m" and "1m0s", a key source and
// a list of one) compare equal.
func RenderPolicy(c policy.Config) (string, error) {
	if len(c.Rules) == 0 {
		c.Rules = nil
	}
	b, err := yaml.MarshalWithOptions(c, yaml.IndentSequence(true))
	if err != nil {
		return "", fmt.Errorf("config: render: %w", err)
	}
	return string(b), nil
}

// PolicyDelta is the unified diff from the store's configuration to the
// file's, "" when they render the same.
func PolicyDelta(store, file policy.Config, storeName, fileName string) (string, error) {
	a, err := RenderPolicy(store)
	if err != nil {
		return "", err
	}
	b, err := RenderPolicy(file)
	if err != nil {
		return "", err
	}
	return textdiff.Unified(storeName, fileName, a, b, textdiff.Settings{Heading: yamlHeading}), nil
}

// yamlHeading marks the lines that head a part of the rendered
// configuration: a section, a tier, a rule.
func yamlHeading(l string) bool {
	indent := len(l) - len(strings.TrimLeft(l, " "))
	return indent == 0 || indent == 2 && (strings.HasSuffix(l, ":") || strings.HasPrefix(l, "  - "))
}
