package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/throttledhq/throttled/internal/bench"
)

// benchHTTP serves a hello world on loopback with and without the
// enforcement middleware and loads it from this process (bench.Round), or
// serves the modes for a load generator outside it (bench.ServeModes).
func benchHTTP(args []string, w io.Writer) error {
	fs := newFlagSet("bench http", "", "a hello-world served with and without the middleware (none, memory, redis, lease) and behind peers (xrate, echo, naive-redis)")
	fs.SetOutput(w)
	modes := fs.String("modes", "none,memory,redis,lease", "comma-separated: none, memory, redis, lease, memory-noheaders (no rate-limit headers), memory-ietf, memory-legacy, memory-none (header sets), the peers xrate, echo, naive-redis, and wait (a handler that only waits for another goroutine: the most an exact remote decision could read)")
	redisURL := fs.String("redis-url", "redis://127.0.0.1:6379/0", "Redis URL (modes redis, lease and naive-redis)")
	var s bench.HTTPSettings
	fs.IntVar(&s.Conns, "conns", 64, "concurrent connections of the closed loop")
	fs.IntVar(&s.Keys, "keys", 1000, "distinct API keys")
	fs.DurationVar(&s.Duration, "duration", 3*time.Second, "each mode's closed loop (in turns of 1 s after 250 ms not counted, modes interleaved), then its half-load run")
	runs := fs.Int("runs", 3, "rounds (text output ends with the median ratios)")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	fs.IntVar(&s.Store.Pipelines, "pipelines", 0, "redis, lease: pipelines in flight (0: default)")
	fs.DurationVar(&s.Store.Linger, "linger", 0, "redis, lease: how long a pipeline that is not full waits for more decisions (0: default)")
	fs.IntVar(&s.Store.Gather, "gather", 0, "redis, lease: yields of a flusher before it takes a batch (0: default, negative: none)")
	serve := fs.String("serve", "", "serve the modes for a load generator outside this process (wrk: scripts/bench-wrk.sh) instead of loading them: mode i on `host:port` + i (port 0: free ports), one JSON line {mode, url} each once all listen; until interrupted")
	prof := fs.String("cpuprofile", "", "write a CPU profile of the run (server and load generator) to `file`")
	if err := parseFlags(fs, args, w, 0); err != nil {
		return err
	}
	if *prof != "" {
		stop, err := bench.StartCPUProfile(*prof)
		if err != nil {
			return fmt.Errorf("bench http: --cpuprofile: %w", err)
		}
		defer stop()
	}
	if s.Conns < 1 || s.Conns > 4096 || s.Keys < 1 || *runs < 1 || *runs > 100 || s.Duration <= 0 || s.Duration > 10*time.Minute {
		return errors.New("bench http: want 1 ≤ --conns ≤ 4096, --keys ≥ 1, 1 ≤ --runs ≤ 100, 0 < --duration ≤ 10m")
	}
	var needsRedis bool
	var err error
	if s.Modes, needsRedis, err = bench.ParseModes(*modes); err != nil {
		return err
	}
	if needsRedis {
		if s.Redis, err = bench.NewRedis(*redisURL, s.Conns); err != nil {
			return err
		}
		defer s.Redis.Close()
	}
	if *serve != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return bench.ServeModes(ctx, s, *serve, w)
	}
	return benchHTTPRounds(w, s, *runs, *asJSON)
}

// benchHTTPRounds runs the rounds and prints each mode's line (or JSON
// object), then, as text, the median ratios.
func benchHTTPRounds(w io.Writer, s bench.HTTPSettings, runs int, asJSON bool) error {
	enc := json.NewEncoder(w)
	ratios := make([][]float64, len(s.Modes))
	for round := 1; round <= runs; round++ {
		res, err := bench.Round(s)
		if err != nil {
			return err
		}
		for i, r := range res {
			r.Round = round
			ratios[i] = append(ratios[i], r.Ratio)
			if asJSON {
				err = enc.Encode(r)
			} else {
				_, err = fmt.Fprintf(w, "round %d %-6s %8.0f req/s (%.2f of none); CPU %.1f µs/req + Redis %.1f; at %.0f req/s p50 %.0fµs p99 %.0fµs; %d errors\n",
					round, r.Mode, r.RequestsPerSec, r.Ratio, r.CPUMicros, r.RedisCPUMicros, r.HalfLoadRPS, r.P50Micros, r.P99Micros, r.Errors)
			}
			if err != nil {
				return err
			}
		}
	}
	if !asJSON {
		fmt.Fprint(w, "median of none:")
		for i, m := range s.Modes[1:] {
			fmt.Fprintf(w, " %s %.2f", m, median(ratios[i+1]))
		}
		fmt.Fprintln(w)
	}
	return nil
}

func median(v []float64) float64 {
	v = slices.Sorted(slices.Values(v))
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
