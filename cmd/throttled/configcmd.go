package main

import (
	"encoding/json"
	"os"

	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/throttledhq/throttled/config"
)

// configCmd is `throttled config check FILE` and `throttled config schema`.
func configCmd(args []string, stdout io.Writer) error {
	subs := map[string]func([]string, io.Writer) error{"check": configCheck, "schema": configSchemaCmd,
		"export": configExport, "diff": configDiff, "import": configImport}
	const use = "usage: throttled config check FILE   validate a configuration: every error and warning\n" +
		"       throttled config schema       print the JSON config.Schema (draft 2020-12) of the configuration file\n" +
		"       throttled config export       the store's tiers, rules and assignments as YAML\n" +
		"       throttled config diff FILE    the store against FILE (exit 0 same, 1 different, 2 trouble)\n" +
		"       throttled config import FILE  write FILE into the store over the version read first\n"
	if len(args) == 0 {
		return &usageError{"config: missing subcommand (check, schema, export, diff or import)\n" + use}
	}
	if wantsHelp(args[:1]) {
		fmt.Fprint(stdout, use)
		return flag.ErrHelp
	}
	sub, ok := subs[args[0]]
	if !ok {
		return unknownCommand("config subcommand", args[0], slices.Sorted(maps.Keys(subs)))
	}
	return sub(args[1:], stdout)
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
	c, r := config.Check(src, os.Environ(), nil)
	if r.Errors() > 0 {
		return fmt.Errorf("%s: %s\n%w", path, r.Summary(), r)
	}
	for _, w := range r {
		fmt.Fprintln(stdout, w)
	}
	store := "memory (embedded)"
	if c.Redis.Configured() {
		store = "redis"
	}
	_, err = fmt.Fprintf(stdout, "%s: ok (%d tiers, %d rules, store %s)\n", path, len(c.Tiers), len(c.Rules), store)
	return err
}

// configSchemaCmd is `throttled config schema`.
func configSchemaCmd(args []string, stdout io.Writer) error {
	fs := newFlagSet("config schema", "", "print the JSON config.Schema (draft 2020-12) of the configuration file")
	if err := parseFlags(fs, args, stdout, 0); err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(config.Schema())
}
