// Command throttled runs the adaptive throttling controller.
//
//	throttled serve --config FILE   the proxy, admin API, controller, /metrics, /healthz, /readyz
//	throttled config check FILE     validate a configuration: every error and warning at once
//	throttled config schema         the JSON Schema of the configuration file
//	throttled config export|diff|import   the store's tiers, rules and assignments as YAML, against a file, from a file
//	throttled demo      simulated overload on embedded defaults, live table
//	throttled script A  print the Lua script of algorithm A (for SCRIPT LOAD)
//	throttled version   print the version (also throttled --version)
//	throttled admin pin|unpin|tier set   admin API writes that handle the ETag (internal/adminclient)
//	throttled healthcheck   GET the local /readyz, exit 0 or 1 (for distroless images)
package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	"github.com/throttledhq/throttled"
	"github.com/throttledhq/throttled/internal/adminclient"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// version is set at build time with -ldflags "-X main.version=…"; the
// library reports it as throttled.Version (build info, start log).
var version = "dev"

func main() {
	if version != "dev" {
		throttled.Version = version
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		usage(stdout)
		return 0
	case "--version", "-version":
		fmt.Fprintln(stdout, "throttled", throttled.Version)
		return 0
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		return exitCode(unknownCommand("command", args[0], slices.Sorted(maps.Keys(commands()))), stderr)
	}
	return exitCode(cmd(args[1:], stdout, stderr), stderr)
}

// commands are the subcommands by name.
func commands() map[string]func(args []string, stdout, stderr io.Writer) error {
	return map[string]func(args []string, stdout, stderr io.Writer) error{
		"serve":       serve,
		"config":      func(a []string, o, _ io.Writer) error { return configCmd(a, o) },
		"demo":        func(a []string, o, _ io.Writer) error { return demo(a, o) },
		"bench":       func(a []string, o, _ io.Writer) error { return benchCmd(a, o) },
		"script":      func(a []string, o, _ io.Writer) error { return script(a, o) },
		"healthcheck": healthcheck,
		"admin": func(a []string, o, _ io.Writer) error {
			err := adminclient.Command(a, os.Environ(), o)
			if errors.Is(err, adminclient.ErrUsage) {
				return &usageError{err.Error()}
			}
			return err
		},
		"version": func(a []string, o, _ io.Writer) error {
			if err := parseFlags(newFlagSet("version", "", "print the version (also: throttled --version)"), a, o, 0); err != nil {
				return err
			}
			_, err := fmt.Fprintln(o, "throttled", throttled.Version)
			return err
		},
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: throttled <command> [flags]

commands:
  serve     run the proxy, admin API, controller and /metrics (--config FILE)
  config    check FILE: validate a configuration, every error and warning with its line
            schema: print the JSON config.Schema of the configuration file
            export: the store's tiers, rules and assignments as YAML (--redis-url URL or --config FILE)
            diff FILE: the store against FILE, a unified diff (exit 0 same, 1 different, 2 trouble)
            import FILE: write FILE's tiers, rules and assignments into the store, only over the
                         version read first (--if-version N, --force)
  demo      simulated overload: backend, free and premium clients, proxy and controller (--duration)
  bench     decisions: decisions/s and latency of a store (--store memory|redis, --json)
            overload: a scenario (surge, crowd, slowdown, instances) against a backend of capacity C,
                      per mode (controller, static, off, all), the config.Report as JSON (--json)
            http: a hello-world served with and without the middleware (none, memory, redis, lease)
            rls: a gRPC load generator for any Envoy rate limit service (--addr, --descriptor, --json)
  script    print the Lua script of an algorithm (for SCRIPT LOAD / redis-benchmark)
  version   print the version (also --version)
  admin     pin TIER MULTIPLIER [--ttl D], unpin TIER, tier set NAME --rate N …: admin API writes
            that fetch the ETag themselves (--url, --token or THROTTLED_ADMIN_URL, THROTTLED_ADMIN_TOKEN)
  healthcheck  GET the local /readyz (--url), exit 0 when 2xx, else 1: for HEALTHCHECK and probes

Run 'throttled <command> --help' for a command's flags.
`)
}

// script prints the Lua source of one algorithm.
func script(args []string, w io.Writer) error {
	fs := newFlagSet("script", "ALGORITHM", "print the Lua script of an algorithm, e.g. token_bucket (for SCRIPT LOAD)")
	name, err := parseOneArg(fs, args, w, "ALGORITHM")
	if err != nil {
		return err
	}
	alg, err := limiter.ParseAlgorithm(name)
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, redisstore.ScriptSource(alg))
	return err
}
