package config

import (
	"errors"
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

// Load reads the configuration file at path as `throttled serve` does:
// strictly (unknown keys are errors), with the process's THROTTLED_*
// environment overrides applied, defaults filled and every value
// validated. The error is the whole Report when the file has errors.
func Load(path string) (*Config, error) { return LoadEnv(path, os.Environ()) }

// FromEnv is the configuration of the THROTTLED_* variables in environ
// alone, with defaults filled (no file): what the commands that only
// reach the store need. It is not validated as a server's would be.
func FromEnv(environ []string) (*Config, error) {
	c := &Config{}
	if _, rep := applyEnv(c, environ, nil); rep.Errors() > 0 {
		return nil, rep
	}
	c.defaults()
	return c, nil
}

// LoadEnv is Load with the environment given.
func LoadEnv(path string, environ []string) (*Config, error) {
	c, _, err := LoadChecked(path, environ, nil)
	return c, err
}

// LoadChecked is LoadEnv that also returns the warnings; flags maps the
// THROTTLED_* variables that flags supplied to the flags' names.
func LoadChecked(path string, environ []string, flags map[string]string) (*Config, Report, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	c, r := Check(src, environ, flags)
	if r.Errors() > 0 {
		return nil, r, r
	}
	return c, r.Warnings(), nil
}

func Parse(src []byte, environ []string) (*Config, error) {
	c, r := Check(src, environ, nil)
	if r.Errors() > 0 {
		return nil, r
	}
	return c, nil
}

// checkConfig reads a configuration and reports every problem at once,
// sorted by line: YAML syntax, unknown keys, wrong types, bad values from
// the environment or flags, every validation error, and the warnings. It
// returns a Config only when the YAML parses.
func Check(src []byte, environ []string, flags map[string]string) (*Config, Report) {
	c, idx, r := decodeConfig(src)
	if c == nil {
		return nil, r
	}
	origins, envErrs := applyEnv(c, environ, flags)
	r = append(r, envErrs...)
	for _, e := range c.Redis.loadPassword(origins) {
		r = append(r, locate(e, idx, origins, false))
	}
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
func decodeConfig(src []byte) (*Config, lineIndex, Report) {
	file, err := parser.ParseBytes(src, 0)
	if err != nil {
		return nil, nil, Report{yamlFinding(err)}
	}
	var doc any
	if err := yaml.Unmarshal(src, &doc); err != nil {
		return nil, nil, Report{yamlFinding(err)}
	}
	idx := indexLines(file)
	var s shaper
	clean, ok := s.value("", orEmpty(doc), reflectConfig)
	if !ok { // not a mapping at all: nothing of it decodes
		clean = map[string]any{}
	}
	var r Report
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
func locate(e fieldErr, idx lineIndex, origins map[string]string, warn bool) Finding {
	for p := e.path; p != ""; p = parentPath(p) {
		if o, ok := origins[p]; ok {
			return Finding{origin: o, path: e.path, msg: e.msg, warn: warn}
		}
	}
	return Finding{line: idx.line(e.path), path: e.path, msg: e.msg, warn: warn}
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
func yamlFinding(err error) Finding {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		return Finding{line: ye.GetToken().Position.Line, msg: "YAML: " + plainYAML(err)}
	}
	return Finding{msg: "YAML: " + plainYAML(err)}
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

// SetDefaults fills every field left zero with its default, as Load does.
// Calling it again changes nothing.
func (c *Config) SetDefaults() { c.defaults() }

// Validate reports every problem of c, a Config built in code or changed
// after Load, as a Report (nil when there is none). Call SetDefaults
// first: a zero field where a default is due is a problem.
func (c *Config) Validate() error {
	var r Report
	for _, e := range c.validate() {
		r = append(r, Finding{path: e.path, msg: e.msg})
	}
	if len(r) == 0 {
		return nil
	}
	r.sort()
	return r
}
