package throttled

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// memoryPolicyRisk is throttled_redis_memory_policy_risk by policy.
func memoryPolicyRisk(t *testing.T, s *Instance) map[string]float64 {
	t.Helper()
	return memoryPolicySeries(t, s.gather, "throttled_redis_memory_policy_risk")
}

// memoryPolicySeries is the gauge name of g by its policy label.
func memoryPolicySeries(t *testing.T, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			got[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return got
}

// startMemoryPolicyStack builds a stack on redisURL, logging at debug level
// (so the lines folded while Redis is down too), whose policy check runs
// every 10 ms, and runs its background parts until the test ends. reads
// counts the policy's reads.
func startMemoryPolicyStack(t *testing.T, redisURL string, logs *testenv.SyncBuffer) (s *Instance, reads *atomic.Int64) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s, err := New(ctx, configtest.Serve(t, "", redisURL), Options{Logger: log})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	reads = &atomic.Int64{}
	read := s.memPolicy.read
	s.memPolicy.read = func(ctx context.Context) (redisstore.MemoryPolicy, error) {
		defer reads.Add(1)
		return read(ctx)
	}
	s.memPolicy.every = 10 * time.Millisecond
	done := make(chan struct{})
	for _, run := range s.runners {
		go func() { _ = run(ctx); done <- struct{}{} }()
	}
	t.Cleanup(func() {
		cancel()
		for range s.runners {
			<-done
		}
		s.Close()
	})
	return s, reads
}

// waitReads waits, bounded, until n more reads of the policy are done.
func waitReads(t *testing.T, reads *atomic.Int64, n int64) {
	t.Helper()
	want := reads.Load() + n
	for end := time.Now().Add(10 * time.Second); reads.Load() < want; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d reads of the policy within 10 s, want %d", reads.Load(), want)
		}
	}
}

// waitMemoryPolicyRisk polls the gauge, bounded, until it is want.
func waitMemoryPolicyRisk(t *testing.T, s *Instance, want map[string]float64, logs *testenv.SyncBuffer) {
	t.Helper()
	var got map[string]float64
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if got = memoryPolicyRisk(t, s); maps.Equal(got, want) {
			return
		}
	}
	t.Fatalf("throttled_redis_memory_policy_risk %v, want %v within 10 s\n%s", got, want, logs.String())
}

// TestMemoryPolicyFollowsConfigSet: a CONFIG SET maxmemory-policy on the
// live Redis moves the gauge to the new policy, the old policy's series
// gone, and warns once about the new risk.
func TestMemoryPolicyFollowsConfigSet(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	if err := c.ConfigSet(context.Background(), "maxmemory-policy", "volatile-ttl").Err(); err != nil {
		t.Fatal(err)
	}
	var logs testenv.SyncBuffer
	s, reads := startMemoryPolicyStack(t, r.URL(), &logs)
	if got := memoryPolicyRisk(t, s); !maps.Equal(got, map[string]float64{"volatile-ttl": 0}) {
		t.Fatalf("at start: %v, want volatile-ttl 0", got)
	}
	if err := c.ConfigSet(context.Background(), "maxmemory-policy", "allkeys-lru").Err(); err != nil {
		t.Fatal(err)
	}
	waitMemoryPolicyRisk(t, s, map[string]float64{"allkeys-lru": 1}, &logs)
	waitReads(t, reads, 3) // on the same policy
	if n := strings.Count(logs.String(), "maxmemory-policy allkeys-lru can evict"); n != 1 {
		t.Errorf("%d warnings about allkeys-lru, want 1\n%s", n, logs.String())
	}
}

// TestMemoryPolicyCheckedOnceRedisAnswers: with Redis down at start there
// is no series; once Redis answers the gauge is set, and the failed reads
// were logged once.
func TestMemoryPolicyCheckedOnceRedisAnswers(t *testing.T) {
	r := testenv.StartRedis(t)
	r.Kill()
	var logs testenv.SyncBuffer
	s, reads := startMemoryPolicyStack(t, r.URL(), &logs)
	if got := memoryPolicyRisk(t, s); len(got) != 0 {
		t.Fatalf("redis down at start: %v, want no series", got)
	}
	waitReads(t, reads, 3) // failing
	r.Start()              // no maxmemory: noeviction is safe
	waitMemoryPolicyRisk(t, s, map[string]float64{"noeviction": 0}, &logs)
	if n := strings.Count(logs.String(), "redis maxmemory-policy not checked"); n != 1 {
		t.Errorf("%d lines about failed reads, want 1\n%s", n, logs.String())
	}
}

// TestMemoryPolicyWatchObserve: through a sequence of reads the gauge holds
// one series, the last successful read's; a failed read keeps it and is
// logged once per streak; a risk is warned when it appears or changes.
func TestMemoryPolicyWatchObserve(t *testing.T) {
	var logs testenv.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "risk"}, []string{"policy"})
	reg.MustRegister(g)
	w := &memoryPolicyWatch{gauge: g, log: log, redisLog: log}
	down := errors.New("connection refused")
	ttl := redisstore.MemoryPolicy{Policy: "volatile-ttl"}
	lru := redisstore.MemoryPolicy{Policy: "allkeys-lru", Risk: "can evict"}
	noev := redisstore.MemoryPolicy{Policy: "noeviction"}
	full := redisstore.MemoryPolicy{Policy: "noeviction", MaxMemory: 1 << 20, Risk: "turns writes into errors"}
	for i, tt := range []struct {
		mp    redisstore.MemoryPolicy
		err   error
		gauge string // the series, as policy=value
		log   string // the line logged, "" none
	}{
		{err: down, gauge: "", log: "not checked"},
		{err: down, gauge: ""},
		{mp: ttl, gauge: "volatile-ttl=0"},
		{mp: ttl, gauge: "volatile-ttl=0"},
		{mp: lru, gauge: "allkeys-lru=1", log: "allkeys-lru can evict"},
		{mp: lru, gauge: "allkeys-lru=1"},
		{err: down, gauge: "allkeys-lru=1", log: "not checked"},
		{err: down, gauge: "allkeys-lru=1"},
		{mp: lru, gauge: "allkeys-lru=1"},
		{err: down, gauge: "allkeys-lru=1", log: "not checked"},
		{mp: noev, gauge: "noeviction=0", log: "noeviction: no longer a risk"},
		{mp: full, gauge: "noeviction=1", log: "noeviction turns writes into errors"},
		{mp: ttl, gauge: "volatile-ttl=0", log: "volatile-ttl: no longer a risk"},
	} {
		before := logs.String()
		w.observe(tt.mp, tt.err)
		var series []string
		for p, v := range memoryPolicySeries(t, reg, "risk") {
			series = append(series, fmt.Sprintf("%s=%v", p, v))
		}
		logged := strings.TrimPrefix(logs.String(), before)
		if strings.Join(series, ",") != tt.gauge || (tt.log == "") != (logged == "") || !strings.Contains(logged, tt.log) {
			t.Errorf("t%d: gauge %v, logged %q; want %s, %q", i, series, logged, tt.gauge, tt.log)
		}
	}
}

// TestMemoryPolicyWarningNamesNode: the warning about a risk names the
// cluster node it was read on, as "node"; on a single Redis (no node) it
// has no such attribute.
func TestMemoryPolicyWarningNamesNode(t *testing.T) {
	for _, tt := range []struct {
		node, want string // want: in the line, "" for no node attribute
	}{
		{"10.0.0.7:6379", "node=10.0.0.7:6379"},
		{"", ""},
	} {
		var logs testenv.SyncBuffer
		log := slog.New(slog.NewTextHandler(&logs, nil))
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "risk"}, []string{"policy"})
		w := &memoryPolicyWatch{gauge: g, log: log, redisLog: log}
		w.observe(redisstore.MemoryPolicy{Policy: "allkeys-lru", Risk: "can evict", Node: tt.node}, nil)
		line := logs.String()
		if !strings.Contains(line, "allkeys-lru can evict") || (tt.want == "") == strings.Contains(line, "node=") ||
			!strings.Contains(line, tt.want) {
			t.Errorf("node %q: logged %q, want the warning with %q", tt.node, line, tt.want)
		}
	}
}
