package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// RLSSpec is a run of `throttled bench rls`: Concurrency callers ask the
// rate limit services at Addrs (Envoy's RLS v3, gRPC: throttled's or any
// other) for decisions on Descriptor, whose "{id}" is a key id.
type RLSSpec struct {
	Addrs       []string // caller g asks Addrs[g % len], one connection each
	Domain      string
	Descriptor  []DescriptorEntry // ParseDescriptor
	Concurrency int
	Keys        int           // key ids 0..Keys-1, taken round robin
	Duration    time.Duration // measured
	Warmup      time.Duration // load before the measure, not counted
	PIDs        []int         // the services' processes: their CPU per 10k decisions
	Redis       *redis.Client // the services' Redis: its CPU per decision (nil: none)
}

// DescriptorEntry is one key=value of a descriptor; "{id}" in Value is
// replaced by the key id of each call.
type DescriptorEntry struct{ Key, Value string }

// RLSResult is what `throttled bench rls --json` prints. Decisions counts
// every call finished in the measure, ok + over_limit + errors; the rate
// and the CPU figures count answers (ok + over_limit).
type RLSResult struct {
	Concurrency            int     `json:"concurrency"`
	Keys                   int     `json:"keys"`
	DurationSeconds        float64 `json:"duration_seconds"`
	Decisions              int64   `json:"decisions"`
	DecisionsPerSec        float64 `json:"decisions_per_sec"`
	P50Micros              float64 `json:"p50_us"`
	P99Micros              float64 `json:"p99_us"`
	Errors                 int64   `json:"errors"`
	OK                     int64   `json:"ok"`
	OverLimit              int64   `json:"over_limit"`
	ServiceCPUPer10k       float64 `json:"service_cpu_s_per_10k"`     // s of --pids CPU per 10k answers (0 without --pids)
	RedisCPUPerDecision    float64 `json:"redis_cpu_us_per_decision"` // µs of Redis CPU per answer (0 without --redis-url)
	FallbackOK             int64   `json:"fallback_ok"`               // ok answers throttled marked fallback (decided without the store)
	ScriptCallsPerDecision float64 `json:"script_calls_per_decision"` // EVALSHA and EVAL calls per answer (0 without --redis-url)
	FirstError             string  `json:"first_error,omitempty"`
}

// ErrDescriptor is a --descriptor that is not key=value,… .
var ErrDescriptor = errors.New("bench: --descriptor: want key=value,… (say rule=per_key,key={id})")

// ParseDescriptor reads 'rule=per_key,key={id}': entries in order.
func ParseDescriptor(s string) ([]DescriptorEntry, error) {
	var out []DescriptorEntry
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%w: %q", ErrDescriptor, kv)
		}
		out = append(out, DescriptorEntry{k, v})
	}
	return out, nil
}

// request is the call for key id.
func (s *RLSSpec) request(id string) *rlsv3.RateLimitRequest {
	entries := make([]*ratelimitv3.RateLimitDescriptor_Entry, len(s.Descriptor))
	for i, e := range s.Descriptor {
		entries[i] = &ratelimitv3.RateLimitDescriptor_Entry{Key: e.Key, Value: strings.ReplaceAll(e.Value, "{id}", id)}
	}
	return &rlsv3.RateLimitRequest{Domain: s.Domain, HitsAddend: 1,
		Descriptors: []*ratelimitv3.RateLimitDescriptor{{Entries: entries}}}
}

// dialRLS is one client connection per address, connected.
func dialRLS(addrs []string) ([]rlsv3.RateLimitServiceClient, func(), error) {
	var conns []*grpc.ClientConn
	closeAll := func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	clients := make([]rlsv3.RateLimitServiceClient, len(addrs))
	for i, a := range addrs {
		c, err := grpc.NewClient(a, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			closeAll()
			return nil, nil, fmt.Errorf("bench: --addr %q: %w", a, err)
		}
		conns = append(conns, c)
		clients[i] = rlsv3.NewRateLimitServiceClient(c)
	}
	return clients, closeAll, nil
}

// callTimeout bounds one call, so a stalled service ends the run as errors.
const callTimeout = 5 * time.Second

// RLS loads the services of spec for its warmup, then for its duration,
// and measures the second part.
func RLS(spec RLSSpec) (RLSResult, error) {
	if len(spec.Addrs) == 0 || spec.Concurrency < 1 || spec.Keys < 1 || spec.Duration <= 0 || len(spec.Descriptor) == 0 {
		return RLSResult{}, errors.New("bench: rls: want an address, a descriptor, concurrency, keys and a duration")
	}
	clients, closeAll, err := dialRLS(spec.Addrs)
	if err != nil {
		return RLSResult{}, err
	}
	defer closeAll()
	var next atomic.Int64 // round robin over the key ids
	if spec.Warmup > 0 {
		_ = loadRLS(&spec, clients, &next, spec.Warmup)
	}
	svc0, err := procCPU(spec.PIDs)
	if err != nil {
		return RLSResult{}, err
	}
	red0, calls0 := RedisCPUSeconds(spec.Redis), RedisScriptCalls(spec.Redis)
	start := time.Now()
	l := loadRLS(&spec, clients, &next, spec.Duration)
	el := time.Since(start)
	svc1, err := procCPU(spec.PIDs)
	if err != nil {
		return RLSResult{}, err
	}
	red1, calls1 := RedisCPUSeconds(spec.Redis), RedisScriptCalls(spec.Redis)
	q := quantiles(l.lat)
	res := RLSResult{Concurrency: spec.Concurrency, Keys: spec.Keys, DurationSeconds: el.Seconds(),
		Errors: l.errs.Load(), OK: l.ok.Load(), OverLimit: l.over.Load(), FallbackOK: l.fallbackOK.Load(), P50Micros: q(0.5), P99Micros: q(0.99)}
	res.FirstError = l.first
	res.Decisions = res.OK + res.OverLimit + res.Errors
	if answers := float64(res.OK + res.OverLimit); answers > 0 {
		res.DecisionsPerSec = answers / el.Seconds()
		if len(spec.PIDs) > 0 {
			res.ServiceCPUPer10k = (svc1 - svc0).Seconds() / answers * 10_000
		}
		if spec.Redis != nil {
			res.RedisCPUPerDecision = (red1 - red0) / answers * 1e6
			res.ScriptCallsPerDecision = (calls1 - calls0) / answers
		}
	}
	return res, nil
}

// rlsLoad is what the callers of one loadRLS counted.
type rlsLoad struct {
	ok, over, errs atomic.Int64
	fallbackOK     atomic.Int64 // OK answers marked fallback (throttled's dynamic metadata)
	mu             sync.Mutex
	first          string // the first error
	lat            [][]time.Duration
}

// loadRLS runs spec's callers for dur; calls in flight at the end finish
// and count.
func loadRLS(spec *RLSSpec, clients []rlsv3.RateLimitServiceClient, next *atomic.Int64, dur time.Duration) *rlsLoad {
	l := &rlsLoad{lat: make([][]time.Duration, spec.Concurrency)}
	var stop atomic.Bool
	t := time.AfterFunc(dur, func() { stop.Store(true) })
	defer t.Stop()
	var wg sync.WaitGroup
	for g := range spec.Concurrency {
		c := clients[g%len(clients)]
		wg.Go(func() {
			for !stop.Load() {
				req := spec.request(fmt.Sprint(next.Add(1) % int64(spec.Keys)))
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				t0 := time.Now()
				r, err := c.ShouldRateLimit(ctx, req)
				d := time.Since(t0)
				cancel()
				l.count(r, err)
				l.lat[g] = append(l.lat[g], d)
			}
		})
	}
	wg.Wait()
	return l
}

// count adds one answer (or error).
func (l *rlsLoad) count(r *rlsv3.RateLimitResponse, err error) {
	switch {
	case err != nil:
		l.fail(err)
	case r.GetOverallCode() == rlsv3.RateLimitResponse_OK:
		l.ok.Add(1)
		if r.GetDynamicMetadata().GetFields()["fallback"].GetBoolValue() {
			l.fallbackOK.Add(1)
		}
	case r.GetOverallCode() == rlsv3.RateLimitResponse_OVER_LIMIT:
		l.over.Add(1)
	default:
		l.fail(fmt.Errorf("bench: rls: overall code %v", r.GetOverallCode()))
	}
}

// fail counts an error and keeps the first.
func (l *rlsLoad) fail(err error) {
	l.errs.Add(1)
	l.mu.Lock()
	if l.first == "" {
		l.first = err.Error()
	}
	l.mu.Unlock()
}
