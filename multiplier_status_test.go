package throttled

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/admin"
	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/limiter/multiplier"
	"github.com/throttledhq/throttled/policy"
)

// An enforcer that does not lead tells GET /v1/multipliers what the leader
// published: the source in throttled_effective_multiplier's words
// (controller, not redis), and why each tier last moved and since when.
func TestMultiplierStatusFromRedis(t *testing.T) {
	c := testenv.StartRedis(t).Client()
	s := coord.Settings{Prefix: "status:", PollInterval: 50 * time.Millisecond}
	pub, err := coord.NewPublisher(c, s)
	if err != nil {
		t.Fatal(err)
	}
	since := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	set := multiplier.Set{Tiers: map[string]float64{"free": 0.05, "premium": 1}, Epoch: 3, At: time.Now(),
		Reasons: map[string]string{"free": "decrease: latency 0.82s > target 0.25s"}, Since: map[string]time.Time{"free": since}}
	if err := pub.Publish(context.Background(), set); err != nil {
		t.Fatal(err)
	}
	sub, err := coord.NewSubscriber(c, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	testenv.WaitFor(t, 10*time.Second, "the subscriber holds epoch 3", func() bool { return sub.Snapshot().Epoch == 3 })
	st := &multiplierStatus{tiers: func() []string { return []string{"premium", "free"} }, m: &pinned{src: sub, now: time.Now}}
	got := st.Multipliers()
	if len(got) != 2 || got[1].Tier != "free" {
		t.Fatalf("Multipliers() = %+v", got)
	}
	free := got[1]
	if free.Source != "controller" || free.Multiplier != 0.05 || free.Reason != set.Reasons["free"] || !free.Since.Equal(since) {
		t.Fatalf("free: %+v, want source controller, 0.05, the published reason and since %v", free, since)
	}
	if got[0].Reason != "" || !got[0].Since.IsZero() {
		t.Fatalf("premium never moved: %+v", got[0])
	}
}

// In one process (no Redis) the controller's own publication is told alike;
// before it, the source is none.
func TestMultiplierStatusLocal(t *testing.T) {
	local := &localMultipliers{}
	st := &multiplierStatus{tiers: func() []string { return []string{"free"} }, m: &pinned{src: local, now: time.Now}}
	if got := st.Multipliers(); got[0].Source != "none" || got[0].Multiplier != 1 {
		t.Fatalf("before any publication: %+v", got)
	}
	at := time.Now()
	_ = local.Publish(context.Background(), multiplier.Set{Tiers: map[string]float64{"free": 0.5}, Epoch: 1, At: at,
		Reasons: map[string]string{"free": "decrease: error_ratio 0.2 > target 0.05"}, Since: map[string]time.Time{"free": at}})
	if got := st.Multipliers()[0]; got.Source != "controller" || got.Multiplier != 0.5 || got.Reason == "" || !got.Since.Equal(at) || !got.UpdatedAt.Equal(at) {
		t.Fatalf("after a publication: %+v", got)
	}
}

// oneTick is a controller clock that ends the loop after its first step.
type oneTick struct {
	now    time.Time
	cancel context.CancelFunc
}

func (c *oneTick) Now() time.Time { return c.now }
func (c *oneTick) Sleep(ctx context.Context, _ time.Duration) error {
	c.cancel()
	return ctx.Err()
}

type overloaded struct{}

func (overloaded) Read(context.Context) (controller.Input, error) {
	return controller.Input{Signals: []controller.Signal{{Name: "latency", Value: 0.82, Target: 0.25, Valid: true}}}, nil
}

// A cut by the leader reaches GET /v1/multipliers of an enforcer that does
// not lead, through Redis: the reason in words and since when, with the
// source the metric says.
func TestMultipliersExplainedOnAnotherInstance(t *testing.T) {
	r := testenv.StartRedis(t)
	cs := coord.Settings{Prefix: "explained:", PollInterval: 50 * time.Millisecond}
	pub, err := coord.NewPublisher(r.Client(), cs)
	if err != nil {
		t.Fatal(err)
	}
	law, err := controller.NewLaw(controller.Settings{Tiers: []controller.Tier{{Name: "premium", Priority: 1}, {Name: "free", Priority: 10}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	at := time.Now().Truncate(time.Second)
	loop, err := controller.NewLoop(law, overloaded{}, pub, localLease{}, nil, controller.WithClock(&oneTick{now: at, cancel: cancel}))
	if err != nil {
		t.Fatal(err)
	}
	if err := loop.Run(ctx); err != nil {
		t.Fatal(err)
	}
	sub, err := coord.NewSubscriber(r.Client(), cs, nil) // the other instance: its own subscriber
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sub.Run(sctx) }()
	t.Cleanup(func() { stop(); <-done })
	testenv.WaitFor(t, 10*time.Second, "the enforcer holds the cut", func() bool { return sub.Multiplier("free") == 0.5 })

	var cfg policy.Config
	if err := json.Unmarshal([]byte(`{"tiers":{"free":{"rate":10,"period":"1s","priority":10},"premium":{"rate":100,"period":"1s","priority":1}}}`), &cfg); err != nil {
		t.Fatal(err)
	}
	status := &multiplierStatus{tiers: func() []string { return []string{"premium", "free"} }, m: &pinned{src: sub, now: time.Now}}
	srv, err := admin.New(context.Background(), admin.Settings{Initial: cfg, Multipliers: status,
		Tokens: map[string]admin.Token{"ops": {Token: testenv.WriteToken, Role: admin.RoleRead}}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	_, body := testenv.Call(t, "GET", hs.URL+"/v1/multipliers", "", "Authorization", "Bearer "+testenv.WriteToken)
	for _, want := range []string{`"tier":"free","multiplier":0.5,"source":"controller"`,
		`"reason":"decrease: latency 0.82s \u003e target 0.25s","since":"` + at.UTC().Format(time.RFC3339) + `"`} {
		if !strings.Contains(body, want) {
			t.Errorf("GET /v1/multipliers lacks %s:\n%s", want, body)
		}
	}
}
