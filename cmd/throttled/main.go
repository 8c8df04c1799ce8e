// Command throttled runs the adaptive throttling controller.
//
//	throttled serve --config FILE   the proxy, admin API, controller, /metrics, /healthz, /readyz
//	throttled config check FILE     validate a configuration
//	throttled config export|diff|import   the store's tiers, rules and assignments as YAML, against a file, from a file
//	throttled demo      simulated overload on embedded defaults, live table
//	throttled script A  print the Lua script of algorithm A (for SCRIPT LOAD)
//	throttled version   print the version
//	throttled healthcheck   GET the local /readyz, exit 0 or 1 (for distroless images)
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	var err error
	switch args[0] {
	case "serve":
		err = serve(args[1:], stdout, stderr)
	case "config":
		err = configMain(args[1:], stdout)
	case "demo":
		err = demo(args[1:], stdout)
	case "bench":
		err = bench(args[1:], stdout)
	case "script":
		err = script(args[1:], stdout)
	case "healthcheck":
		err = healthcheck(args[1:], stdout, stderr)
	case "version":
		_, err = fmt.Fprintln(stdout, "throttled", version)
	case "help", "-h", "--help":
		usage(stdout)
		return 0
	default:
		fmt.Fprintf(stderr, "throttled: unknown command %q\n", args[0])
		usage(stderr)
		return 2
	}
	if err != nil {
		return exitStatus(err, stderr)
	}
	return 0
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: throttled <command> [flags]

commands:
  serve     run the proxy, admin API, controller and /metrics (--config FILE)
  config    check FILE: validate a configuration, errors with line numbers
            export: the store's tiers, rules and assignments as YAML (--redis-url URL or --config FILE)
            diff FILE: the store against FILE, a unified diff (exit 0 same, 1 different, 2 trouble)
            import FILE: write FILE's tiers, rules and assignments into the store, only over the
                         version read first (--if-version N, --force)
  demo      simulated overload: backend, free and premium clients, proxy and controller (--duration)
  bench     decisions: decisions/s and latency of a store (--store memory|redis, --json)
            overload: a scenario (surge, crowd, slowdown, instances) against a backend of capacity C,
                      per mode (controller, static, off, all), the report as JSON (--json)
            http: a hello-world served with and without the middleware (none, memory, redis, lease)
  script    print the Lua script of an algorithm (for SCRIPT LOAD / redis-benchmark)
  version   print the version
  healthcheck  GET the local /readyz (--url), exit 0 when 2xx, else 1: for HEALTHCHECK and probes
`)
}

// script prints the Lua source of one algorithm.
func script(args []string, w io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("script: want one algorithm name, e.g. token_bucket")
	}
	alg, err := limiter.ParseAlgorithm(args[0])
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, redisstore.ScriptSource(alg))
	return err
}
