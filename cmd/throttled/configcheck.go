package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
)

// fieldErr is a validation error at a YAML path such as "tiers.free.rate".
type fieldErr struct {
	path string
	msg  string
}

// loadConfig reads a YAML file strictly (unknown keys are errors), applies
// environment overrides, fills defaults and validates. The error is the
// whole report (a report value) when the file has errors.
func loadConfig(path string, environ []string) (*Config, error) {
	c, _, err := loadChecked(path, environ, nil)
	return c, err
}

// loadChecked is loadConfig that also returns the warnings; flags maps the
// THROTTLED_* variables that flags supplied to the flags' names.
func loadChecked(path string, environ []string, flags map[string]string) (*Config, report, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	c, r := checkConfig(src, environ, flags)
	if r.errors() > 0 {
		return nil, r, r
	}
	return c, r.warnings(), nil
}

func parseConfig(src []byte, environ []string) (*Config, error) {
	c, r := checkConfig(src, environ, nil)
	if r.errors() > 0 {
		return nil, r
	}
	return c, nil
}

// checkConfig reads a configuration and reports every problem at once,
// sorted by line: YAML syntax, unknown keys, wrong types, bad values from
// the environment or flags, every validation error, and the warnings. It
// returns a Config only when the YAML parses.
func checkConfig(src []byte, environ []string, flags map[string]string) (*Config, report) {
	c, idx, r := decodeConfig(src)
	if c == nil {
		return nil, r
	}
	origins, envErrs := applyEnv(c, environ, flags)
	r = append(r, envErrs...)
	c.defaults()
	bad := map[string]bool{} // paths already reported: their zero values would only repeat it
	for _, f := range r {
		bad[f.path] = true
	}
	for _, e := range c.validate() {
		if !under(e.path, bad) {
			r = append(r, locate(e, idx, origins, false))
		}
	}
	for _, e := range c.warnings(environ) {
		r = append(r, locate(e, idx, origins, true))
	}
	r.sort()
	return c, r
}

// decodeConfig parses src, checks its shape against Config and decodes
// what fits.
func decodeConfig(src []byte) (*Config, lineIndex, report) {
	file, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil, nil, report{yamlFinding(err)}
	}
	var doc any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, nil, report{yamlFinding(err)}
	}
	idx := indexLines(file)
	var s shaper
	clean, ok := s.value("", orEmpty(doc), reflectConfig)
	if !ok { // not a mapping at all: nothing of it decodes
		clean = map[string]any{}
	}
	var r report
	for _, e := range s.errs {
		r = append(r, locate(e, idx, nil, false))
	}
	var c Config
	b, err := yaml.Marshal(clean)
	if err == nil {
		err = yaml.UnmarshalWithOptions(b, &c, yaml.DisallowUnknownField())
	}
	if err != nil { // what the shape check missed: the strict decoder's error on src, in words
		if err := yaml.UnmarshalWithOptions(src, &Config{}, yaml.DisallowUnknownField()); err != nil {
			r = append(r, yamlFinding(err))
		}
	}
	return &c, idx, r
}

func orEmpty(doc any) any {
	if doc == nil {
		return map[string]any{}
	}
	return doc
}

// locate places a validation error on its line, or names the flag or
// variable that supplied the value.
func locate(e fieldErr, idx lineIndex, origins map[string]string, warn bool) finding {
	for p := e.path; p != ""; p = parentPath(p) {
		if o, ok := origins[p]; ok {
			return finding{origin: o, path: e.path, msg: e.msg, warn: warn}
		}
	}
	return finding{line: idx.line(e.path), path: e.path, msg: e.msg, warn: warn}
}

// under reports whether path or one of its ancestors is in paths.
func under(path string, paths map[string]bool) bool {
	for p := path; p != ""; p = parentPath(p) {
		if paths[p] {
			return true
		}
	}
	return false
}

// parentPath is "tiers.free" for "tiers.free.rate" and "rules" for
// "rules[0]"; "" at the top.
func parentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// yamlFinding is a syntax error on its line.
func yamlFinding(err error) finding {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		return finding{line: ye.GetToken().Position.Line, msg: "YAML: " + plainYAML(err)}
	}
	return finding{msg: "YAML: " + plainYAML(err)}
}

var goTypeRE = regexp.MustCompile(`cannot unmarshal (\S+) into Go (?:struct field \S* ?of type|value of type) (\S+)`)

// plainYAML is a decoding error without Go's struct internals.
func plainYAML(err error) string {
	msg := err.Error()
	var ye yaml.Error
	if errors.As(err, &ye) {
		msg = ye.GetMessage()
	}
	return goTypeRE.ReplaceAllString(msg, "want a value of another type, got a $1")
}

// configCheck is `throttled config check FILE`: every error and warning,
// sorted by line; an error (exit 1) when there are errors.
func configCheck(args []string, stdout io.Writer) error {
	fs := newFlagSet("config check", "FILE", "validate a configuration: every error and warning, by line")
	path, err := parseOneArg(fs, args, stdout, "FILE")
	if err != nil {
		return err
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	c, r := checkConfig(src, os.Environ(), nil)
	if r.errors() > 0 {
		return fmt.Errorf("%s: %s\n%w", path, r.summary(), r)
	}
	for _, w := range r {
		fmt.Fprintln(stdout, w)
	}
	store := "memory (embedded)"
	if c.Redis.URL != "" || len(c.Redis.ClusterAddrs) > 0 {
		store = "redis"
	}
	_, err = fmt.Fprintf(stdout, "%s: ok (%d tiers, %d rules, store %s)\n", path, len(c.Tiers), len(c.Rules), store)
	return err
}
