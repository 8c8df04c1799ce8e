package bench

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/overload"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/pipeline"
	"github.com/throttledhq/throttled/limiter/redisstore"
	"github.com/throttledhq/throttled/limiter/tokenlease"
)

// HTTPResult is one mode of one round of `throttled bench http`.
type HTTPResult struct {
	Round          int     `json:"round"`
	Mode           string  `json:"mode"`             // none, memory, memory-noheaders, memory-ietf, memory-legacy, memory-none, redis, lease, wait, or a peer
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

// HTTPSettings are a run of `throttled bench http`.
type HTTPSettings struct {
	Modes    []string            // from ParseModes: none first
	Redis    *redis.Client       // for the modes that need Redis (nil: none does)
	Store    redisstore.Settings // of modes redis and lease
	Conns    int                 // connections of the closed loop
	Keys     int                 // distinct API keys
	Duration time.Duration       // each mode's closed loop, then its half-load run
}

// ParseModes reads a --modes list (comma-separated): mode none comes first,
// added when missing (the ratios and the half load are of none), and
// needsRedis says whether a mode needs Redis. An unknown mode is an error
// that names it and the modes there are.
func ParseModes(list string) (ms []string, needsRedis bool, err error) {
	ms = strings.Split(list, ",")
	if ms[0] != "none" {
		ms = append([]string{"none"}, ms...)
	}
	for _, m := range ms {
		r, ok := modes[m]
		if !ok {
			return nil, false, fmt.Errorf("bench http: mode %q: want one of %s", m, strings.Join(slices.Sorted(maps.Keys(modes)), ", "))
		}
		needsRedis = needsRedis || r
	}
	return ms, needsRedis, nil
}

// slice is how long one mode is measured at a time: the modes' closed
// loops take turns, so that a burst of other work on the machine falls on
// every mode alike. Each turn starts with leadIn of load that is not
// counted, so that a mode is measured as it runs under continuous
// traffic, not as the other modes' turns left it: idle. A gap longer than
// the lease TTL (1 s) lapses every lease of lease mode, and then the first
// request of each of the 1,000 keys waits for Redis, which a continuously
// loaded server never sees; with 250 ms turns and no lead-in that was a
// fifth of lease mode's requests.
const (
	slice  = time.Second
	leadIn = 250 * time.Millisecond
)

// Round measures each mode of s.Modes (the first is none): closed loops of
// s.Duration each, interleaved in slices in an order that turns every
// pass, then each mode at half of none's requests/s for s.Duration. The
// caller sets the results' Round.
func Round(s HTTPSettings) ([]HTTPResult, error) {
	ts := make([]*target, len(s.Modes))
	defer func() {
		for _, t := range ts {
			t.close()
		}
	}()
	for i, m := range s.Modes {
		h, err := Handler(m, s.Redis, s.Store)
		if err != nil {
			return nil, err
		}
		if ts[i], err = startTarget(h, m, s.Conns); err != nil {
			return nil, err
		}
		ts[i].loop(s.Conns, s.Keys, min(s.Duration/10, 100*time.Millisecond), 0) // connections up, caches warm
	}
	res := closedLoops(ts, s)
	base := res[0].RequestsPerSec
	for i, m := range s.Modes {
		quiet(ts, i)
		lat, errs := ts[i].loop(s.Conns, s.Keys, s.Duration, base/2)
		res[i].Mode, res[i].Ratio, res[i].HalfLoadRPS, res[i].Errors = m, res[i].RequestsPerSec/base, base/2, res[i].Errors+errs
		slices.Sort(lat)
		if len(lat) > 0 {
			res[i].P50Micros = float64(lat[len(lat)/2].Microseconds())
			res[i].P99Micros = float64(lat[len(lat)*99/100].Microseconds())
		}
	}
	return res, nil
}

// closedLoops runs the targets' closed loops in turns and returns their
// requests/s, errors and CPU per request.
func closedLoops(ts []*target, s HTTPSettings) []HTTPResult {
	res, reqs := make([]HTTPResult, len(ts)), make([]int, len(ts))
	turns, lead := max(1, int((s.Duration+slice/2)/slice)), min(leadIn, s.Duration/4)
	for pass := range turns {
		for j := range ts {
			i := (pass + j) % len(ts)
			ts[i].loop(s.Conns, s.Keys, lead, 0)
			cpu, rcpu := overload.CPUTime(), RedisCPUSeconds(s.Redis)
			n, errs := ts[i].loop(s.Conns, s.Keys, s.Duration/time.Duration(turns), 0)
			res[i].CPUMicros += (overload.CPUTime() - cpu).Seconds() * 1e6 // per request below
			res[i].RedisCPUMicros += (RedisCPUSeconds(s.Redis) - rcpu) * 1e6
			res[i].RequestsPerSec += float64(len(n)) / s.Duration.Seconds()
			res[i].Errors += errs
			reqs[i] += len(n)
		}
	}
	for i := range res {
		res[i].CPUMicros /= float64(max(reqs[i], 1))
		res[i].RedisCPUMicros /= float64(max(reqs[i], 1))
	}
	return res
}

// quiet readies the half-load run of ts[i]: the other targets' idle
// connections are closed, so that the run has only its own connections'
// goroutines (client and server), and the heap is collected, so that no
// mode's run pays for the garbage of the ones before it. With the other
// targets' connections open, every mode's p99 at half load read 1.5–3 ms
// higher (BENCHMARKS.md, HTTP overhead).
func quiet(ts []*target, i int) {
	for j, t := range ts {
		if j != i {
			t.tr.CloseIdleConnections()
		}
	}
	runtime.GC()
}

var helloWorld = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	_, _ = io.WriteString(w, "Hello, World!")
})

// modes are the modes of bench http, and whether each needs Redis.
var modes = map[string]bool{"none": false, "memory": false, memoryNoHeaders: false, "memory-ietf": false,
	"memory-legacy": false, "memory-none": false, "redis": true, "lease": true,
	peerXRate: false, peerEcho: false, peerNaiveRedis: true, modeWait: false}

// memoryNoHeaders is mode memory with the rule's hide_client_headers: the
// same decisions without the five rate-limit headers, which the peers do
// not send either: what the headers cost, measured in the same run.
const memoryNoHeaders = "memory-noheaders"

// headerSets are the header sets of the memory modes: memory writes both
// (the default), memory-<set> the set of that name (memory-none as
// memoryNoHeaders, by the rule's headers: none).
var headerSets = map[string]enforce.HeaderSet{"memory": enforce.HeadersBoth, "memory-ietf": enforce.HeadersIETF,
	"memory-legacy": enforce.HeadersLegacy, "memory-none": enforce.HeadersNone, memoryNoHeaders: enforce.HeadersBoth}

// Limit is the quota of every mode, per API key and second: one no client
// reaches.
const Limit = 1e9

// Handler is the hello world behind the pipeline of mode m (or a peer's
// limiter, peers.go): one rule per API key, a quota no client reaches.
func Handler(m string, rdb *redis.Client, set redisstore.Settings) (http.Handler, error) {
	return limitedHandler(m, rdb, set, Limit)
}

// limitedHandler is Handler with a quota of limit per key and second.
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
	case "memory", memoryNoHeaders, "memory-ietf", "memory-legacy", "memory-none":
		s = limiter.NewMemory()
	case "redis", "lease":
		var err error
		if s, err = redisstore.NewWithSettings(rdb, set, limiter.WithPrefix(Prefix)); err != nil {
			return nil, fmt.Errorf("bench http: --pipelines: %w", err)
		}
		if m == "lease" {
			if s, err = tokenlease.New(s, tokenlease.Settings{Size: 64}); err != nil {
				return nil, fmt.Errorf("bench http: mode lease: %w", err)
			}
		}
	}
	p := enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: limit, Period: time.Second, Priority: 1}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}, HideHeaders: m == memoryNoHeaders,
			Headers: headerSets[m]}},
	}
	// Unassigned API keys are anonymous by default, and a rule keyed by
	// api_key skips anonymous clients: without this the middleware decided
	// nothing and the bench measured a hello world twice.
	e, err := enforce.New(s, p, enforce.Settings{UnassignedKeys: enforce.UnassignedDefaultTier})
	if err != nil {
		return nil, fmt.Errorf("bench http: mode %s: %w", m, err)
	}
	// The one request path every front runs, with the decision as its only
	// stage: what these modes measured before through the enforcer's own
	// adapter.
	pl, err := pipeline.New(pipeline.Settings{Enforcer: e})
	if err != nil {
		return nil, fmt.Errorf("bench http: mode %s: %w", m, err)
	}
	return pl.Handler(helloWorld), nil
}
