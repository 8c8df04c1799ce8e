package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
)

// TestCLIHelp: --help and -h on any command print its usage to stdout and
// exit 0 (they used to print "flag: help requested" and exit 1).
func TestCLIHelp(t *testing.T) {
	for _, args := range [][]string{
		{"--help"}, {"-h"}, {"help"}, {"serve", "--help"}, {"serve", "-h"}, {"config", "--help"},
		{"config", "check", "--help"}, {"config", "check", "x.yaml", "--help"}, {"config", "schema", "-h"},
		{"demo", "--help"}, {"bench", "--help"}, {"bench", "overload", "-h"}, {"bench", "http", "--help"},
		{"script", "--help"}, {"version", "--help"},
	} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		if code != 0 || !strings.HasPrefix(out.String(), "usage: throttled") || errOut.Len() > 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
	var out bytes.Buffer
	run([]string{"serve", "--help"}, &out, &out)
	if !strings.Contains(out.String(), "-listen") || !strings.Contains(out.String(), "-config") {
		t.Errorf("serve --help does not list its flags:\n%s", out.String())
	}
}

// TestCLIVersion: throttled --version and throttled version.
func TestCLIVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 0 || out.String() != "throttled "+version+"\n" {
			t.Errorf("%q: exit %d, %q %q", args, code, out.String(), errOut.String())
		}
	}
}

// TestCLIFlagErrorPrintedOnce: a bad flag is reported once, with the
// command's usage, exit 2.
func TestCLIFlagErrorPrintedOnce(t *testing.T) {
	for _, args := range [][]string{{"serve", "--nope"}, {"demo", "--nope"}, {"bench", "overload", "--nope"}} {
		var out, errOut bytes.Buffer
		code := run(args, &out, &errOut)
		if code != 2 || strings.Count(errOut.String(), "-nope") != 1 || out.Len() > 0 ||
			!strings.Contains(errOut.String(), "usage: throttled") {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out.String(), errOut.String())
		}
	}
}

// TestCLIUnknownCommandSuggests: the nearest command is suggested.
func TestCLIUnknownCommandSuggests(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sevre"}, `unknown command "sevre"; did you mean "serve"?`},
		{[]string{"verison"}, `unknown command "verison"; did you mean "version"?`},
		{[]string{"config", "chek", "x.yaml"}, `unknown config subcommand "chek"; did you mean "check"?`},
		{[]string{"frobnicate"}, `unknown command "frobnicate"` + "\n"},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q, want %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}

// TestCLIExtraArguments: positional arguments a command does not take are
// errors that name them.
func TestCLIExtraArguments(t *testing.T) {
	path := testenv.WriteFile(t, testenv.ReadmeConfig)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--config", path, "extra"}, `serve: unexpected argument "extra"`},
		{[]string{"config", "check", path, "b.yaml", "c.yaml"}, `config check: unexpected arguments "b.yaml" "c.yaml"`},
		{[]string{"config", "schema", "x"}, `config schema: unexpected argument "x"`},
		{[]string{"script", "token_bucket", "gcra"}, `script: unexpected argument "gcra"`},
		{[]string{"version", "now"}, `version: unexpected argument "now"`},
		{[]string{"demo", "fast"}, `demo: unexpected argument "fast"`},
		{[]string{"bench", "http", "x"}, `bench http: unexpected argument "x"`},
		{[]string{"config", "check"}, "config check: missing FILE"},
	} {
		var out, errOut bytes.Buffer
		if code := run(tc.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tc.want) {
			t.Errorf("%q: exit %d, stderr %q, want %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}
