package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/throttledhq/throttled/internal/suggest"
)

// usageError is a mistake on the command line. Its text, the problem and
// the command's usage, is printed once, and throttled exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return strings.TrimRight(e.msg, "\n") }

// newFlagSet is a FlagSet for `throttled NAME [flags] ARGS` whose usage
// says what the command does.
func newFlagSet(name, args, summary string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() { printUsage(fs, args, summary) }
	return fs
}

func printUsage(fs *flag.FlagSet, args, summary string) {
	w := fs.Output()
	fmt.Fprintf(w, "usage: throttled %s", fs.Name())
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprint(w, " [flags]")
	}
	if args != "" {
		fmt.Fprint(w, " "+args)
	}
	fmt.Fprintln(w)
	if summary != "" {
		fmt.Fprintln(w, "\n"+summary)
	}
	if n > 0 {
		fmt.Fprintln(w, "\nflags:")
		fs.PrintDefaults()
	}
}

// parseFlags parses args into fs. -h or --help (anywhere) prints the usage
// to stdout and returns flag.ErrHelp; a bad flag, or more than maxArgs
// positional arguments, returns a *usageError that holds the problem and
// the usage.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer, maxArgs int) error {
	var buf bytes.Buffer
	fs.SetOutput(&buf)
	defer fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) || err == nil && wantsHelp(fs.Args()) {
		buf.Reset()
		fs.SetOutput(stdout)
		fs.Usage()
		return flag.ErrHelp
	}
	if err != nil {
		return &usageError{buf.String()}
	}
	if fs.NArg() > maxArgs {
		extra := fs.Args()[maxArgs:]
		fs.Usage()
		return &usageError{fmt.Sprintf("%s: unexpected %s %s\n%s", fs.Name(), pluralWord(len(extra), "argument"),
			quoteAll(extra), buf.String())}
	}
	return nil
}

// parseOneArg parses args into fs, which take exactly one positional
// argument (named what in the error), and returns it.
func parseOneArg(fs *flag.FlagSet, args []string, stdout io.Writer, what string) (string, error) {
	if err := parseFlags(fs, args, stdout, 1); err != nil {
		return "", err
	}
	if fs.NArg() == 0 {
		var buf bytes.Buffer
		fs.SetOutput(&buf)
		fs.Usage()
		fs.SetOutput(io.Discard)
		return "", &usageError{fmt.Sprintf("%s: missing %s\n%s", fs.Name(), what, buf.String())}
	}
	return fs.Arg(0), nil
}

func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" {
			return true
		}
	}
	return false
}

func quoteAll(list []string) string {
	q := make([]string, len(list))
	for i, s := range list {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, " ")
}

func pluralWord(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// exitCode prints err once and returns the process's exit code: 0 for
// none or help, 2 for a usage error, 1 otherwise.
func exitCode(err error, stderr io.Writer) int {
	var ue *usageError
	var se *statusError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &se): // config diff: 1 different, 2 trouble
		if se.err != nil {
			fmt.Fprintln(stderr, "throttled:", se.err)
		}
		return se.code
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "throttled:", ue.Error())
		return 2
	}
	fmt.Fprintln(stderr, "throttled:", err)
	return 1
}

// unknownCommand is the error for a command name that is not one of names.
func unknownCommand(kind, name string, names []string) error {
	return &usageError{fmt.Sprintf("unknown %s %q%s\nrun 'throttled --help' for the commands", kind, name,
		suggest.DidYouMean(name, names))}
}
