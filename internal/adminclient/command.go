package adminclient

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// DefaultURL is the admin API's URL when neither --url nor
// THROTTLED_ADMIN_URL gives one (the README's quick start).
const DefaultURL = "http://127.0.0.1:9090"

// DefaultPinTTL is how long `admin pin` pins without --ttl.
const DefaultPinTTL = 10 * time.Minute

// Usage is the `throttled admin` command's synopsis.
const Usage = `throttled admin pin TIER MULTIPLIER [--ttl D]   pin a tier's multiplier (default ttl 10m)
throttled admin unpin TIER                     remove the pin: the controller's multiplier again
throttled admin tier set NAME --rate N [--period D] [--burst N] [--priority N] [--algorithm A]
                         [--alpha X] [--beta X] [--floor X] [--ceiling X]   change (or create) a tier
flags everywhere: --url URL (THROTTLED_ADMIN_URL, default ` + DefaultURL + `), --token T (THROTTLED_ADMIN_TOKEN)`

// ErrUsage is wrapped by the errors of a command line that does not parse.
var ErrUsage = errors.New("usage")

// Command runs `throttled admin ARGS` with the environment env and prints
// what it did on stdout.
func Command(args, env []string, stdout io.Writer) error {
	if len(args) == 0 {
		return usageErr("a subcommand: pin, unpin or tier set")
	}
	fs := flag.NewFlagSet("admin "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := &Client{URL: lookup(env, "THROTTLED_ADMIN_URL", DefaultURL), Token: lookup(env, "THROTTLED_ADMIN_TOKEN", "")}
	fs.StringVar(&c.URL, "url", c.URL, "admin API URL (THROTTLED_ADMIN_URL)")
	fs.StringVar(&c.Token, "token", c.Token, "admin API write token (THROTTLED_ADMIN_TOKEN)")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch args[0] {
	case "pin":
		return pin(ctx, c, fs, args[1:], stdout)
	case "unpin":
		pos, err := parse(fs, args[1:], 1)
		if err != nil {
			return err
		}
		if _, err := c.Unpin(ctx, pos[0]); err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s: unpinned: the controller's multiplier is in force\n", pos[0])
		return err
	case "tier":
		if len(args) < 2 || args[1] != "set" {
			return usageErr("tier set NAME --rate N …")
		}
		return setTier(ctx, c, fs, args[2:], stdout)
	case "help", "-h", "--help":
		_, err := fmt.Fprintln(stdout, "usage:\n"+Usage)
		return err
	}
	return usageErr(fmt.Sprintf("unknown subcommand %q: want pin, unpin or tier set", args[0]))
}

func pin(ctx context.Context, c *Client, fs *flag.FlagSet, args []string, stdout io.Writer) error {
	ttl := fs.Duration("ttl", DefaultPinTTL, "how long the pin holds")
	pos, err := parse(fs, args, 2)
	if err != nil {
		return err
	}
	m, err := strconv.ParseFloat(pos[1], 64)
	if err != nil {
		return usageErr(fmt.Sprintf("MULTIPLIER %q: want a number in (0, 1]", pos[1]))
	}
	res, err := c.Pin(ctx, pos[0], m, *ttl)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s: pinned at %v for %v (%d): %s\n", pos[0], m, *ttl, res.Status, strings.TrimSpace(string(res.Body)))
	return err
}

// tierFlags are the tier fields `tier set` takes, by JSON name.
var tierFlags = []struct{ name, kind, help string }{
	{"rate", "int", "requests per period"}, {"period", "string", "the rate's period, e.g. 1s, 1m"},
	{"burst", "int", "bucket size"}, {"priority", "int", "0 is the highest"},
	{"algorithm", "string", "token_bucket, gcra, …"}, {"alpha", "float", "additive increase"},
	{"beta", "float", "multiplicative decrease"}, {"floor", "float", "lowest multiplier"},
	{"ceiling", "float", "highest multiplier"},
}

func setTier(ctx context.Context, c *Client, fs *flag.FlagSet, args []string, stdout io.Writer) error {
	vals := map[string]*string{}
	for _, f := range tierFlags {
		vals[f.name] = fs.String(f.name, "", f.help)
	}
	pos, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	fields := map[string]any{}
	var bad error
	fs.Visit(func(fl *flag.Flag) {
		for _, f := range tierFlags {
			if f.name == fl.Name {
				if fields[f.name], err = typed(f.kind, *vals[f.name]); err != nil && bad == nil {
					bad = usageErr(fmt.Sprintf("--%s %q: want a number", f.name, *vals[f.name]))
				}
			}
		}
	})
	if bad != nil {
		return bad
	}
	if len(fields) == 0 {
		return usageErr("tier set " + pos[0] + ": no field to set (--rate, --period, --burst, --priority, …)")
	}
	res, err := c.SetTier(ctx, pos[0], fields)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "tier %s set (%d): %s\n", pos[0], res.Status, strings.TrimSpace(string(res.Body)))
	return err
}

func typed(kind, v string) (any, error) {
	switch kind {
	case "int":
		return strconv.ParseInt(v, 10, 64)
	case "float":
		return strconv.ParseFloat(v, 64)
	}
	return v, nil
}

// parse reads flags before and after the positional arguments, of which
// there must be want.
func parse(fs *flag.FlagSet, args []string, want int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usageErr(err.Error())
		}
		if args = fs.Args(); len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	if len(pos) != want {
		return nil, usageErr(fmt.Sprintf("want %d argument(s), got %d", want, len(pos)))
	}
	return pos, nil
}

func usageErr(msg string) error { return fmt.Errorf("%w: admin: %s\n%s", ErrUsage, msg, Usage) }

// lookup is env's value of key, or def.
func lookup(env []string, key, def string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return def
}
