package controller_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/redisstore"
	"github.com/throttledhq/throttled/signals"
)

// The end-to-end setup. Prometheus scrapes every second (testenv's
// default); the signal queries are the signals package defaults with a 3 s
// rate window instead of 1 m, so that a change of the service shows within
// a few seconds. The cool-down between cuts is that window: a cut can show
// its effect on the signal before the next one.
const (
	e2ePrefix        = "e2e:"
	e2eWindow        = "[3s]"
	e2ePeriod        = 500 * time.Millisecond
	e2eCooldown      = 3 * time.Second
	e2eLatencyTarget = 0.5  // seconds
	e2eErrorTarget   = 0.05 // 5xx share
	e2eFloor         = 0.05
	e2eBound         = 30 * time.Second // every wait on the loop
	e2eRoundGap      = 200 * time.Millisecond
	e2eFreeKey       = "key-free"
	e2ePremiumKey    = "key-premium"
)

// e2ePolicy gives both tiers 20 requests/s with a burst of 4. A probe round
// (at least e2eRoundGap apart, so the quota refills its 4 tokens) sends 3
// free requests back to back and 1 premium: the quota never refuses (no
// 429), and the admission bucket, of capacity 4 × m, refuses the third free
// request as soon as m ≤ 0.5. Only the load multiplier can refuse.
func e2ePolicy() enforce.Policy {
	tier := func(name string, prio int) enforce.Tier {
		return enforce.Tier{Name: name, Algorithm: limiter.TokenBucket, Limit: 20, Period: time.Second, Burst: 4, Priority: prio}
	}
	return enforce.Policy{
		Tiers: []enforce.Tier{tier("premium", 0), tier("free", 1)},
		Rules: []enforce.Rule{{Name: "api", Path: "/api", Keys: []string{"header:X-API-Key"}}},
	}
}

// e2eEnv is the running system: one controller process (signals source,
// loop, lease, publisher) and one enforcer process (subscriber, Redis
// store, middleware), sharing one Redis.
type e2eEnv struct {
	svc     *e2eService
	loop    *controller.Loop
	ctrlReg *prometheus.Registry
	pub     *e2ePublisher
	sub     *coord.Subscriber
	app     e2eClient
	rdb     *redis.Client
	last    time.Time // end of the last probe round
}

func TestEndToEnd(t *testing.T) {
	rd := testenv.StartRedis(t)
	svc := startE2EService(t)
	prom := testenv.StartPrometheus(t, svc.addr())
	e := &e2eEnv{svc: svc, ctrlReg: prometheus.NewRegistry(), rdb: rd.Client()}
	e.startController(t, prom.URL())
	e.startEnforcer(t, rd.Client())

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	runErr := make(chan error, 1)
	wg.Go(func() { svc.drive(ctx) })
	wg.Go(func() { runErr <- e.loop.Run(ctx) })
	wg.Go(func() { _ = e.sub.Run(ctx) })
	stop := sync.OnceFunc(func() { cancel(); wg.Wait() })
	t.Cleanup(stop) // before Redis, Prometheus and the clients go

	e.healthy(t)
	cut, shed := e.overload(t)
	free200, recovered := e.recover(t)
	t.Logf("overload → free multiplier < 1 at the enforcer after %v, first free 503 after %v", cut.Round(time.Millisecond), shed.Round(time.Millisecond))
	t.Logf("recovery → free 200 again after %v, every multiplier back at 1 after %v", free200.Round(time.Millisecond), recovered.Round(time.Millisecond))
	e.checkPublished(t)

	stop()
	if err := <-runErr; err != nil {
		t.Errorf("Run: %v", err)
	}
	e.checkResigned(t)
}

func (e *e2eEnv) startController(t *testing.T, promURL string) {
	t.Helper()
	lat := strings.ReplaceAll(signals.DefaultLatencyQuery, "[1m]", e2eWindow)
	errs := strings.ReplaceAll(signals.DefaultErrorRatioQuery, "[1m]", e2eWindow)
	if lat == signals.DefaultLatencyQuery || errs == signals.DefaultErrorRatioQuery {
		t.Fatalf("the default queries have no [1m] window to shorten: %q, %q", lat, errs)
	}
	src, err := signals.NewPrometheus(signals.PrometheusSettings{URL: promURL, LatencyQuery: lat, ErrorRatioQuery: errs}, e.ctrlReg)
	if err != nil {
		t.Fatal(err)
	}
	law, err := controller.NewLaw(controller.Settings{Period: e2ePeriod, Cooldown: e2eCooldown, Tiers: []controller.Tier{
		{Name: "premium", Priority: 0, Beta: 0.5, Floor: e2eFloor},
		{Name: "free", Priority: 1, Beta: 0.5, Floor: e2eFloor},
	}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := coord.NewPublisher(e.rdb, coord.Settings{Prefix: e2ePrefix})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := coord.NewLease(e.rdb, e2ePrefix+"leader", 3*e2ePeriod)
	if err != nil {
		t.Fatal(err)
	}
	e.pub = &e2ePublisher{p: p}
	targets := map[signals.Kind]float64{signals.Latency: e2eLatencyTarget, signals.ErrorRatio: e2eErrorTarget}
	e.loop, err = controller.NewLoop(law, controller.FromSignals(src, targets), e.pub, lease, e.ctrlReg)
	if err != nil {
		t.Fatal(err)
	}
}

func (e *e2eEnv) startEnforcer(t *testing.T, rdb *redis.Client) {
	t.Helper()
	var err error
	e.sub, err = coord.NewSubscriber(rdb, coord.Settings{Prefix: e2ePrefix}, prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	enf, err := enforce.New(redisstore.New(rdb, limiter.WithPrefix(e2ePrefix+"rl:")), e2ePolicy(), enforce.Settings{
		Tiers:       e2eTiers{e2eFreeKey: "free", e2ePremiumKey: "premium"},
		Multipliers: e.sub,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(enf.Middleware(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})))
	t.Cleanup(srv.Close)
	c := &http.Client{Timeout: 5 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	e.app = e2eClient{url: srv.URL, c: c}
}

// round sends one probe round (3 free requests, 1 premium), at least
// e2eRoundGap after the last, and returns the first refusal of the free
// ones (else a 200) and the premium reply. Any 429 fails the test: the
// quota is sized so that only load refuses. It also checks the priority
// order on what the enforcer holds.
func (e *e2eEnv) round(t *testing.T) (free, premium e2eReply) {
	t.Helper()
	time.Sleep(e2eRoundGap - time.Since(e.last)) // pacing for the quota, not an assertion
	defer func() { e.last = time.Now() }()
	e.checkOrder(t, "the enforcer's multipliers", e.sub.Snapshot().Tiers)
	free = e2eReply{status: http.StatusOK}
	for range 3 {
		r := e.app.get(t, e2eFreeKey)
		if free.status == http.StatusOK {
			free = r
		}
	}
	premium = e.app.get(t, e2ePremiumKey)
	for _, r := range []e2eReply{free, premium} {
		if r.status != http.StatusOK && r.status != http.StatusServiceUnavailable {
			t.Fatalf("got %v; want only 200 or 503 (the quota is never spent)", r)
		}
	}
	return free, premium
}

// checkOrder: priority-ordered AIMD cuts premium only once free is at its
// floor, and raises free only once premium is back at 1.
func (e *e2eEnv) checkOrder(t *testing.T, what string, m map[string]float64) {
	t.Helper()
	if p, ok := m["premium"]; ok && p < 1 && m["free"] != e2eFloor {
		t.Fatalf("%s: premium %v below 1 while free %v is above its floor %v", what, p, m["free"], e2eFloor)
	}
}

// healthy waits for the loop's first usable signals and checks that both
// tiers pass with multipliers at 1.
func (e *e2eEnv) healthy(t *testing.T) {
	t.Helper()
	e2eWait(t, e2eBound, "the controller reads both signals from Prometheus", func() bool {
		_, lat := e2eValue(t, e.ctrlReg, "throttled_controller_signal_seconds", "signal", "latency")
		_, errs := e2eValue(t, e.ctrlReg, "throttled_controller_signal_ratio", "signal", "error_ratio")
		return lat && errs
	})
	e2eWait(t, e2eBound, "the enforcer receives published multipliers", func() bool {
		return e.sub.Snapshot().Origin == coord.OriginRedis
	})
	if n, err := testutil.GatherAndCount(e.ctrlReg, "throttled_controller_signal_seconds", "throttled_controller_signal_ratio"); err != nil || n != 2 {
		t.Fatalf("healthy: %d throttled_controller_signal_* series (err %v), want 2 (latency, error_ratio)", n, err)
	}
	if lat, _ := e2eValue(t, e.ctrlReg, "throttled_controller_signal_seconds", "signal", "latency"); !(lat < e2eLatencyTarget*0.9) {
		t.Fatalf("healthy service: latency signal %v, want below %v", lat, e2eLatencyTarget*0.9)
	}
	for i := range 3 {
		free, premium := e.round(t)
		if free.status != http.StatusOK || premium.status != http.StatusOK {
			t.Fatalf("healthy round %d: free %v, premium %v; want 200 for both", i, free, premium)
		}
	}
	if f, p := e.sub.Multiplier("free"), e.sub.Multiplier("premium"); f != 1 || p != 1 {
		t.Fatalf("healthy: multipliers free %v, premium %v at the enforcer; want 1 and 1", f, p)
	}
}

// overload turns the service slow and waits until free is shed while
// premium passes. It returns how long until the enforcer held a free
// multiplier below 1, and until the first free 503.
func (e *e2eEnv) overload(t *testing.T) (cut, shed time.Duration) {
	t.Helper()
	start := time.Now()
	e.svc.slow.Store(true)
	cut = e2eWait(t, e2eBound, "the enforcer holds a free multiplier below 1", func() bool {
		return e.sub.Multiplier("free") < 1
	})
	for {
		if time.Since(start) > e2eBound {
			t.Fatalf("no free 503 within %v of the overload", e2eBound)
		}
		free, premium := e.round(t)
		if premium.status != http.StatusOK {
			t.Fatalf("overload: premium got %v while free is above its floor (free multiplier %v)", premium, e.sub.Multiplier("free"))
		}
		if free.status == http.StatusServiceUnavailable {
			checkShed(t, free)
			break
		}
	}
	shed = time.Since(start)
	e.checkOverloadMetrics(t)
	return cut, shed
}

// checkShed checks a 503: reason shed, tier free, Retry-After ≥ 1 s.
func checkShed(t *testing.T, r e2eReply) {
	t.Helper()
	ra, err := strconv.Atoi(r.retryAfter)
	if r.refusal.Reason != limiter.Shed.String() || r.refusal.Tier != "free" || err != nil || ra < 1 {
		t.Fatalf("free refusal %v; want reason %q, tier free and Retry-After ≥ 1", r, limiter.Shed)
	}
}

// checkOverloadMetrics: the controller reports the latency above target, a
// free multiplier below 1 and at least one decrease of free.
func (e *e2eEnv) checkOverloadMetrics(t *testing.T) {
	t.Helper()
	if lat, ok := e2eValue(t, e.ctrlReg, "throttled_controller_signal_seconds", "signal", "latency"); !ok || !(lat > e2eLatencyTarget) {
		t.Errorf("overload: throttled_controller_signal_seconds{signal=\"latency\"} = %v (present %v), want above %v", lat, ok, e2eLatencyTarget)
	}
	f, okf := e2eValue(t, e.ctrlReg, "throttled_tier_multiplier", "tier", "free")
	p, okp := e2eValue(t, e.ctrlReg, "throttled_tier_multiplier", "tier", "premium")
	if !okf || !okp || !(f < 1) {
		t.Errorf("overload: throttled_tier_multiplier free %v (present %v), premium %v (present %v); want free below 1", f, okf, p, okp)
	}
	e.checkOrder(t, "throttled_tier_multiplier", map[string]float64{"free": f, "premium": p})
	if n, _ := e2eValue(t, e.ctrlReg, "throttled_controller_steps_total", "tier", "free", "action", "decrease"); n < 1 {
		t.Errorf("overload: throttled_controller_steps_total{tier=\"free\",action=\"decrease\"} = %v, want ≥ 1", n)
	}
}

// recover turns the service fast again and waits until free passes and
// every multiplier is back at 1. It returns how long each took.
func (e *e2eEnv) recover(t *testing.T) (free200, recovered time.Duration) {
	t.Helper()
	start := time.Now()
	e.svc.slow.Store(false)
	for {
		if time.Since(start) > e2eBound {
			t.Fatalf("not recovered within %v: free multiplier %v, premium %v", e2eBound, e.sub.Multiplier("free"), e.sub.Multiplier("premium"))
		}
		free, _ := e.round(t)
		if free.status == http.StatusOK && free200 == 0 {
			free200 = time.Since(start)
		}
		if free200 != 0 && e.sub.Multiplier("free") == 1 && e.sub.Multiplier("premium") == 1 {
			break
		}
	}
	recovered = time.Since(start)
	free, premium := e.round(t)
	if free.status != http.StatusOK || premium.status != http.StatusOK {
		t.Fatalf("recovered: free %v, premium %v; want 200 for both", free, premium)
	}
	if lat, _ := e2eValue(t, e.ctrlReg, "throttled_controller_signal_seconds", "signal", "latency"); !(lat < e2eLatencyTarget*0.9) {
		t.Errorf("recovered: latency signal %v, want below %v", lat, e2eLatencyTarget*0.9)
	}
	const want = `
# HELP throttled_controller_leader 1 while this controller replica holds the leader lease, else 0.
# TYPE throttled_controller_leader gauge
throttled_controller_leader 1
# HELP throttled_tier_multiplier Rate multiplier the controller publishes for each tier (exported by the leader only).
# TYPE throttled_tier_multiplier gauge
throttled_tier_multiplier{tier="free"} 1
throttled_tier_multiplier{tier="premium"} 1
`
	if err := testutil.GatherAndCompare(e.ctrlReg, strings.NewReader(want), "throttled_controller_leader", "throttled_tier_multiplier"); err != nil {
		t.Errorf("recovered: %v", err)
	}
	return free200, recovered
}

// checkPublished checks every publish of the run: none failed, epochs never
// went back, every multiplier within [floor, 1] and in priority order,
// free cut at some point and the last set back at 1.
func (e *e2eEnv) checkPublished(t *testing.T) {
	t.Helper()
	log, err := e.pub.published()
	if err != nil {
		t.Errorf("a publish failed: %v", err)
	}
	minFree := 1.0
	for i, m := range log {
		if i > 0 && m.Epoch < log[i-1].Epoch {
			t.Errorf("publish %d: epoch %d after %d", i, m.Epoch, log[i-1].Epoch)
		}
		for tier, v := range m.Tiers {
			if !(v >= e2eFloor && v <= 1) {
				t.Errorf("publish %d: %s = %v outside [%v, 1]", i, tier, v, e2eFloor)
			}
		}
		e.checkOrder(t, "publish "+strconv.Itoa(i), m.Tiers)
		minFree = min(minFree, m.Tiers["free"])
	}
	if len(log) == 0 || minFree == 1 {
		t.Fatalf("%d publishes, lowest free multiplier %v; want a cut", len(log), minFree)
	}
	if last := log[len(log)-1]; last.Tiers["free"] != 1 || last.Tiers["premium"] != 1 {
		t.Errorf("last publish %+v, want every tier at 1", last)
	}
	t.Logf("%d publishes, last epoch %d, lowest free multiplier %v", len(log), log[len(log)-1].Epoch, minFree)
}

// checkResigned: a stopped loop released its lease and exports no
// multipliers.
func (e *e2eEnv) checkResigned(t *testing.T) {
	t.Helper()
	const want = `
# HELP throttled_controller_leader 1 while this controller replica holds the leader lease, else 0.
# TYPE throttled_controller_leader gauge
throttled_controller_leader 0
`
	if err := testutil.GatherAndCompare(e.ctrlReg, strings.NewReader(want), "throttled_controller_leader", "throttled_tier_multiplier"); err != nil {
		t.Errorf("stopped: %v", err)
	}
	if n, err := e.rdb.Exists(context.Background(), e2ePrefix+"leader").Result(); err != nil || n != 0 {
		t.Errorf("stopped: lease key exists %d times (err %v), want released", n, err)
	}
}
