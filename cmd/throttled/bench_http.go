package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/redisstore"
	"github.com/throttledhq/throttled/limiter/tokenlease"
)

// httpResult is one mode of one round of `throttled bench http`.
type httpResult struct {
	Round          int     `json:"round"`
	Mode           string  `json:"mode"`             // none, memory, memory-noheaders, redis, lease, wait, or a peer
	RequestsPerSec float64 `json:"requests_per_sec"` // closed loop, --conns connections
	Ratio          float64 `json:"ratio"`            // of mode none in the same round
	HalfLoadRPS    float64 `json:"half_load_rps"`    // offered: half of none's requests_per_sec
	P50Micros      float64 `json:"p50_us"`           // at half load, from each request's scheduled time
	P99Micros      float64 `json:"p99_us"`
	Errors         int64   `json:"errors"` // non-200 answers and transport errors
	// CPU of the closed loop per request: this process (load generator,
	// server and middleware: getrusage) and the Redis server (INFO cpu; 0
	// when the run has no Redis). On shared cores their sum, not the
	// middleware alone, sets the ratio.
	CPUMicros      float64 `json:"cpu_us_per_request"`
	RedisCPUMicros float64 `json:"redis_cpu_us_per_request"`
}

// benchHTTP serves a hello world on loopback with and without the
// enforcement middleware and loads it from this process.
func benchHTTP(args []string, w io.Writer) error {
	fs := newFlagSet("bench http", "", "a hello-world served with and without the middleware (none, memory, redis, lease) and behind peers (xrate, echo, naive-redis)")
	fs.SetOutput(w)
	modes := fs.String("modes", "none,memory,redis,lease", "comma-separated: none, memory, redis, lease, memory-noheaders (no rate-limit headers), the peers xrate, echo, naive-redis, and wait (a handler that only waits for another goroutine: the most an exact remote decision could read)")
	redisURL := fs.String("redis-url", "redis://127.0.0.1:6379/0", "Redis URL (modes redis, lease and naive-redis)")
	conns := fs.Int("conns", 64, "concurrent connections of the closed loop")
	keys := fs.Int("keys", 1000, "distinct API keys")
	dur := fs.Duration("duration", 3*time.Second, "each mode's closed loop (in turns of 1 s after 250 ms not counted, modes interleaved), then its half-load run")
	runs := fs.Int("runs", 3, "rounds (text output ends with the median ratios)")
	asJSON := fs.Bool("json", false, "print one JSON object per line")
	pipes := fs.Int("pipelines", 0, "redis, lease: pipelines in flight (0: default)")
	linger := fs.Duration("linger", 0, "redis, lease: how long a pipeline that is not full waits for more decisions (0: default)")
	gather := fs.Int("gather", 0, "redis, lease: yields of a flusher before it takes a batch (0: default, negative: none)")
	serve := fs.String("serve", "", "serve the modes for a load generator outside this process (wrk: scripts/bench-wrk.sh) instead of loading them: mode i on `host:port` + i (port 0: free ports), one JSON line {mode, url} each once all listen; until interrupted")
	prof := fs.String("cpuprofile", "", "write a CPU profile of the run (server and load generator) to `file`")
	if err := parseFlags(fs, args, w, 0); err != nil {
		return err
	}
	if *prof != "" {
		stop, err := startCPUProfile(*prof)
		if err != nil {
			return fmt.Errorf("bench http: --cpuprofile: %w", err)
		}
		defer stop()
	}
	if *conns < 1 || *conns > 4096 || *keys < 1 || *runs < 1 || *runs > 100 || *dur <= 0 || *dur > 10*time.Minute {
		return errors.New("bench http: want 1 ≤ --conns ≤ 4096, --keys ≥ 1, 1 ≤ --runs ≤ 100, 0 < --duration ≤ 10m")
	}
	ms := strings.Split(*modes, ",")
	if len(ms) == 0 || ms[0] != "none" {
		ms = append([]string{"none"}, ms...) // ratios and half load need it first
	}
	var rdb *redis.Client
	for _, m := range ms {
		needsRedis, ok := benchModes[m]
		if !ok {
			return fmt.Errorf("bench http: mode %q: want one of %s", m, strings.Join(slices.Sorted(maps.Keys(benchModes)), ", "))
		}
		if needsRedis && rdb == nil {
			opt, err := redis.ParseURL(*redisURL)
			if err != nil {
				return fmt.Errorf("bench http: --redis-url: %w", err)
			}
			opt.PoolSize, opt.ContextTimeoutEnabled = *conns, true
			rdb = redis.NewClient(opt)
			defer rdb.Close()
		}
	}
	if *serve != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return serveModes(ctx, ms, rdb, redisstore.Settings{Pipelines: *pipes, Linger: *linger, Gather: *gather}, *serve, w)
	}
	enc := json.NewEncoder(w)
	ratios := make([][]float64, len(ms))
	for round := 1; round <= *runs; round++ {
		res, err := benchRound(ms, rdb, redisstore.Settings{Pipelines: *pipes, Linger: *linger, Gather: *gather}, *conns, *keys, *dur)
		if err != nil {
			return err
		}
		for i := range res {
			res[i].Round = round
			ratios[i] = append(ratios[i], res[i].Ratio)
			if *asJSON {
				err = enc.Encode(res[i])
			} else {
				_, err = fmt.Fprintf(w, "round %d %-6s %8.0f req/s (%.2f of none); CPU %.1f µs/req + Redis %.1f; at %.0f req/s p50 %.0fµs p99 %.0fµs; %d errors\n",
					round, res[i].Mode, res[i].RequestsPerSec, res[i].Ratio, res[i].CPUMicros, res[i].RedisCPUMicros,
					res[i].HalfLoadRPS, res[i].P50Micros, res[i].P99Micros, res[i].Errors)
			}
			if err != nil {
				return err
			}
		}
	}
	if !*asJSON {
		fmt.Fprint(w, "median of none:")
		for i, m := range ms[1:] {
			fmt.Fprintf(w, " %s %.2f", m, median(ratios[i+1]))
		}
		fmt.Fprintln(w)
	}
	return nil
}

// benchSlice is how long one mode is measured at a time: the modes'
// closed loops take turns, so that a burst of other work on the machine
// falls on every mode alike. Each turn starts with benchLeadIn of load that
// is not counted, so that a mode is measured as it runs under continuous
// traffic, not as the other modes' turns left it: idle. A gap longer than
// the lease TTL (1 s) lapses every lease of lease mode, and then the first
// request of each of the 1,000 keys waits for Redis, which a continuously
// loaded server never sees; with 250 ms turns and no lead-in that was a
// fifth of lease mode's requests.
const (
	benchSlice  = time.Second
	benchLeadIn = 250 * time.Millisecond
)

// benchRound measures each mode of ms (ms[0] is none): closed loops of dur
// each, interleaved in slices (benchSlice) in an order that turns every
// pass, then each mode at half of none's requests/s for dur.
func benchRound(ms []string, rdb *redis.Client, set redisstore.Settings, conns, keys int, dur time.Duration) ([]httpResult, error) {
	ts := make([]*benchTarget, len(ms))
	defer func() {
		for _, t := range ts {
			t.close()
		}
	}()
	for i, m := range ms {
		h, err := benchHandler(m, rdb, set)
		if err != nil {
			return nil, err
		}
		if ts[i], err = startTarget(h, m, conns); err != nil {
			return nil, err
		}
		ts[i].loop(conns, keys, min(dur/10, 100*time.Millisecond), 0) // connections up, caches warm
	}
	res, reqs := make([]httpResult, len(ms)), make([]int, len(ms))
	turns, lead := max(1, int((dur+benchSlice/2)/benchSlice)), min(benchLeadIn, dur/4)
	for pass := range turns {
		for j := range ms {
			i := (pass + j) % len(ms)
			ts[i].loop(conns, keys, lead, 0)
			cpu, rcpu := cpuSeconds(), redisCPUSeconds(rdb)
			n, errs := ts[i].loop(conns, keys, dur/time.Duration(turns), 0)
			cpu, rcpu = cpuSeconds()-cpu, redisCPUSeconds(rdb)-rcpu
			res[i].RequestsPerSec += float64(len(n)) / dur.Seconds()
			res[i].Errors += errs
			res[i].CPUMicros += cpu * 1e6 // per request below
			res[i].RedisCPUMicros += rcpu * 1e6
			reqs[i] += len(n)
		}
	}
	for i := range res {
		res[i].CPUMicros /= float64(max(reqs[i], 1))
		res[i].RedisCPUMicros /= float64(max(reqs[i], 1))
	}
	base := res[0].RequestsPerSec
	for i, m := range ms {
		quiet(ts, i)
		lat, errs := ts[i].loop(conns, keys, dur, base/2)
		res[i].Mode, res[i].Ratio, res[i].HalfLoadRPS, res[i].Errors = m, res[i].RequestsPerSec/base, base/2, res[i].Errors+errs
		slices.Sort(lat)
		if len(lat) > 0 {
			res[i].P50Micros = float64(lat[len(lat)/2].Microseconds())
			res[i].P99Micros = float64(lat[len(lat)*99/100].Microseconds())
		}
	}
	return res, nil
}

// quiet readies the half-load run of ts[i]: the other targets' idle
// connections are closed, so that the run has only its own connections'
// goroutines (client and server), and the heap is collected, so that no
// mode's run pays for the garbage of the ones before it. With the other
// targets' connections open, every mode's p99 at half load read 1.5–3 ms
// higher (BENCHMARKS.md, HTTP overhead).
func quiet(ts []*benchTarget, i int) {
	for j, t := range ts {
		if j != i {
			t.tr.CloseIdleConnections()
		}
	}
	runtime.GC()
}

func median(v []float64) float64 {
	v = slices.Sorted(slices.Values(v))
	if len(v)%2 == 1 {
		return v[len(v)/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}

var helloWorld = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "Hello, World!")
})

// benchModes are the modes of bench http, and whether each needs Redis.
var benchModes = map[string]bool{"none": false, "memory": false, memoryNoHeaders: false, "redis": true, "lease": true,
	peerXRate: false, peerEcho: false, peerNaiveRedis: true, modeWait: false}

// memoryNoHeaders is mode memory with the rule's hide_client_headers: the
// same decisions without the five rate-limit headers, which the peers do
// not send either: what the headers cost, measured in the same run.
const memoryNoHeaders = "memory-noheaders"

// benchLimit is the quota of every mode, per API key and second: one no
// client reaches.
const benchLimit = 1e9

// benchHandler is the hello world behind the middleware of mode m (or a
// peer's limiter, bench_peers.go): one rule per API key, a quota no client
// reaches.
func benchHandler(m string, rdb *redis.Client, set redisstore.Settings) (http.Handler, error) {
	return limitedHandler(m, rdb, set, benchLimit)
}

// limitedHandler is benchHandler with a quota of limit per key and second.
func limitedHandler(m string, rdb *redis.Client, set redisstore.Settings, limit int64) (http.Handler, error) {
	if h, ok := peerHandler(m, rdb, float64(limit), int(limit)); ok {
		return h, nil
	}
	var s limiter.Store
	switch m {
	case "none":
		return helloWorld, nil
	case modeWait:
		return newWaiter(helloWorld), nil
	case "memory", memoryNoHeaders:
		s = limiter.NewMemory()
	case "redis", "lease":
		var err error
		if s, err = redisstore.NewWithSettings(rdb, set, limiter.WithPrefix(benchPrefix)); err != nil {
			return nil, fmt.Errorf("bench http: --pipelines: %w", err)
		}
		if m == "lease" {
			if s, err = tokenlease.New(s, tokenlease.Settings{Size: 64}); err != nil {
				return nil, err
			}
		}
	}
	p := enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: limit, Period: time.Second, Priority: 1}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}, HideHeaders: m == memoryNoHeaders}},
	}
	// Unassigned API keys are anonymous by default, and a rule keyed by
	// api_key skips anonymous clients: without this the middleware decided
	// nothing and the bench measured a hello world twice.
	e, err := enforce.New(s, p, enforce.Settings{UnassignedKeys: enforce.UnassignedDefaultTier})
	if err != nil {
		return nil, err
	}
	return e.Middleware(helloWorld), nil
}

// benchTarget is one mode's server on loopback and the client loading it.
type benchTarget struct {
	srv    *http.Server
	tr     *http.Transport
	c      *http.Client
	url    string
	labels pprof.LabelSet
}

// startTarget serves h; the server's and the client's goroutines carry
// the profiler label mode=m (--cpuprofile: go tool pprof -tagfocus mode=M).
func startTarget(h http.Handler, m string, conns int) (*benchTarget, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &benchTarget{srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second},
		tr: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}, url: "http://" + ln.Addr().String() + "/hello"}
	t.c = &http.Client{Transport: t.tr, Timeout: 10 * time.Second}
	t.labels = pprof.Labels("mode", m)
	pprof.Do(context.Background(), t.labels, func(context.Context) {
		go t.srv.Serve(ln) //nolint:errcheck // ends with Close
	})
	return t, nil
}

func (t *benchTarget) close() {
	if t != nil {
		t.tr.CloseIdleConnections()
		_ = t.srv.Close()
	}
}

func (t *benchTarget) loop(conns, keys int, dur time.Duration, rate float64) (lat []time.Duration, errs int64) {
	pprof.Do(context.Background(), t.labels, func(context.Context) {
		lat, errs = benchLoop(t.c, t.url, conns, keys, dur, rate)
	})
	return lat, errs
}

// benchLoop sends requests from conns goroutines for dur: back to back
// (rate 0), or each on its schedule at rate requests/s in all, latency
// counted from the scheduled time (no coordinated omission).
func benchLoop(c *http.Client, url string, conns, keys int, dur time.Duration, rate float64) ([]time.Duration, int64) {
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var errs atomic.Int64
	lat := make([][]time.Duration, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gap := time.Duration(0)
			if rate > 0 {
				gap = time.Duration(float64(conns) / rate * float64(time.Second))
			}
			at := start.Add(gap * time.Duration(g) / time.Duration(conns))
			for i := g; ctx.Err() == nil; i += conns {
				if rate > 0 {
					if d := time.Until(at); d > 0 {
						time.Sleep(d)
					}
				} else {
					at = time.Now()
				}
				if !benchGet(c, url, "k"+strconv.Itoa(i%keys)) {
					errs.Add(1)
				} else if ctx.Err() == nil {
					lat[g] = append(lat[g], time.Since(at))
				}
				at = at.Add(gap)
			}
		}()
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return all, errs.Load()
}

// startCPUProfile profiles the process into file until stop.
func startCPUProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

func benchGet(c *http.Client, url, key string) bool {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	req.Header.Set("X-API-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
