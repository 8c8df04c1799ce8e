package coord

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// Helpers of the multiplier tests are prefixed "mt".

var mt0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

var mtSeq atomic.Int64

// mtSettings gives each test its own prefix, so tests on one server do not
// see each other's keys and channels.
func mtSettings(s Settings) Settings {
	s.Prefix = fmt.Sprintf("mt%d:", mtSeq.Add(1))
	return s
}

func mtSet(epoch uint64, at time.Time, tiers map[string]float64) multiplier.Set {
	return multiplier.Set{Tiers: tiers, Epoch: epoch, At: at}
}

func mtPublisher(t *testing.T, c redis.UniversalClient, s Settings) *Publisher {
	t.Helper()
	p, err := NewPublisher(c, s)
	if err != nil {
		t.Fatalf("NewPublisher: %v", err)
	}
	return p
}

func mtPublish(t *testing.T, p *Publisher, m multiplier.Set) {
	t.Helper()
	if err := p.Publish(context.Background(), m); err != nil {
		t.Fatalf("Publish epoch %d: %v", m.Epoch, err)
	}
}

// mtRun starts a subscriber; it stops when the test ends.
func mtRun(t *testing.T, c redis.UniversalClient, s Settings) *Subscriber {
	t.Helper()
	sub, err := NewSubscriber(c, s, nil)
	if err != nil {
		t.Fatalf("NewSubscriber: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sub.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return sub
}

// mtWait polls cond every 5 ms and fails the test if it is not true within d.
func mtWait(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mtListen subscribes to channel with a plain client and returns a function
// that reads the next message as a multiplier.Set.
func mtListen(t *testing.T, c redis.UniversalClient, channel string) func() multiplier.Set {
	t.Helper()
	ctx := context.Background()
	ps := c.Subscribe(ctx, channel)
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.ReceiveTimeout(ctx, 5*time.Second); err != nil {
		t.Fatalf("subscribe %s: %v", channel, err)
	}
	return func() multiplier.Set {
		t.Helper()
		msg, err := ps.ReceiveTimeout(ctx, 5*time.Second)
		if err != nil {
			t.Fatalf("receive on %s: %v", channel, err)
		}
		m, ok := msg.(*redis.Message)
		if !ok {
			t.Fatalf("receive on %s: got %T, want a message", channel, msg)
		}
		set, err := parseMultiplierMessage(m.Payload)
		if err != nil {
			t.Fatalf("message %q: %v", m.Payload, err)
		}
		return set
	}
}

func mtSame(a, b multiplier.Set) bool {
	return a.Epoch == b.Epoch && a.At.Equal(b.At) && maps.Equal(a.Tiers, b.Tiers) && maps.Equal(a.Rates, b.Rates)
}

// TestMultipliersOnRedisAndCluster runs the publisher and subscriber
// scenarios on one redis-server and on a 3-node cluster.
func TestMultipliersOnRedisAndCluster(t *testing.T) {
	r := testenv.StartRedis(t)
	cl := testenv.StartCluster(t)
	for _, b := range []struct {
		name string
		c    redis.UniversalClient
	}{{"redis", r.Client()}, {"cluster", cl.Client(t)}} {
		t.Run(b.name, func(t *testing.T) {
			for _, sc := range []struct {
				name string
				f    func(*testing.T, redis.UniversalClient)
			}{
				{"round trip", mtRoundTrip},
				{"older epoch refused", mtOlderEpochRefused},
				{"bad multipliers rejected", mtBadRejected},
				{"pubsub path", mtPubSubPath},
				{"poll path", mtPollPath},
				{"rate caps", mtRates},
				{"stale leader fenced", mtStaleLeaderFenced},
			} {
				t.Run(sc.name, func(t *testing.T) { sc.f(t, b.c) })
			}
		})
	}
}

func mtRoundTrip(t *testing.T, c redis.UniversalClient) {
	ctx := context.Background()
	p := mtPublisher(t, c, mtSettings(Settings{}))
	if _, found, err := p.Load(ctx); found || err != nil {
		t.Fatalf("Load before any publish: found %v, err %v; want false, nil", found, err)
	}
	m := mtSet(7, mt0.Add(123456789), map[string]float64{"premium": 1, "standard": 1.0 / 3, "free": 0.05})
	mtPublish(t, p, m)
	got, found, err := p.Load(ctx)
	want := mtSet(7, mt0.Add(123*time.Millisecond), m.Tiers) // At kept to the millisecond
	if err != nil || !found || !mtSame(got, want) {
		t.Fatalf("Load = %+v, %v, %v; want %+v, true, nil", got, found, err, want)
	}
	h, err := c.HGetAll(ctx, p.Key()).Result()
	if err != nil {
		t.Fatal(err)
	}
	wantHash := map[string]string{"_epoch": "7", "_at": strconv.FormatInt(mt0.UnixMilli()+123, 10),
		"premium": "1", "standard": "0.3333333333333333", "free": "0.05"}
	if !maps.Equal(h, wantHash) {
		t.Fatalf("hash %v, want %v", h, wantHash)
	}
	// A publication replaces the whole set: a tier that was removed is gone.
	mtPublish(t, p, mtSet(8, mt0, map[string]float64{"premium": 0.5}))
	if got, _, _ := p.Load(ctx); len(got.Tiers) != 1 || got.Tiers["premium"] != 0.5 {
		t.Fatalf("after a smaller set, Load = %+v", got)
	}
}

func mtOlderEpochRefused(t *testing.T, c redis.UniversalClient) {
	ctx := context.Background()
	p := mtPublisher(t, c, mtSettings(Settings{}))
	next := mtListen(t, c, p.Key())
	e5 := mtSet(5, mt0, map[string]float64{"free": 0.5})
	mtPublish(t, p, e5)
	if got := next(); !mtSame(got, e5) {
		t.Fatalf("message %+v, want %+v", got, e5)
	}
	err := p.Publish(ctx, mtSet(4, mt0.Add(time.Second), map[string]float64{"free": 0.1}))
	if !errors.Is(err, ErrStaleEpoch) || !strings.Contains(err.Error(), "epoch 4, redis holds 5") {
		t.Fatalf("publishing epoch 4 over 5: err %v, want ErrStaleEpoch naming both", err)
	}
	if got, _, _ := p.Load(ctx); !mtSame(got, e5) {
		t.Fatalf("after the refused publish, Load = %+v, want %+v", got, e5)
	}
	// The same epoch again is a heartbeat: written and announced. It is the
	// next message, so the refused one was not announced.
	beat := mtSet(5, mt0.Add(5*time.Second), map[string]float64{"free": 0.5})
	mtPublish(t, p, beat)
	if got := next(); !mtSame(got, beat) {
		t.Fatalf("message %+v, want the heartbeat %+v", got, beat)
	}
}

func mtBadRejected(t *testing.T, c redis.UniversalClient) {
	ctx := context.Background()
	s := mtSettings(Settings{})
	p := mtPublisher(t, c, s)
	s.MaxMultiplier = 0.8
	capped := mtPublisher(t, c, s)
	tiers := func(kv ...any) map[string]float64 {
		m := map[string]float64{"premium": 1}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1].(float64)
		}
		return m
	}
	cases := []struct {
		name string
		p    *Publisher
		m    multiplier.Set
		want string
	}{
		{"NaN", p, mtSet(2, mt0, tiers("free", math.NaN())), `tier "free": multiplier NaN must be in (0, 1]`},
		{"+Inf", p, mtSet(2, mt0, tiers("free", math.Inf(1))), `tier "free": multiplier +Inf`},
		{"-Inf", p, mtSet(2, mt0, tiers("free", math.Inf(-1))), `tier "free": multiplier -Inf`},
		{"zero", p, mtSet(2, mt0, tiers("free", 0.0)), `tier "free": multiplier 0 must`},
		{"negative", p, mtSet(2, mt0, tiers("free", -0.5)), `tier "free": multiplier -0.5`},
		{"above 1", p, mtSet(2, mt0, tiers("free", 1.5)), `tier "free": multiplier 1.5`},
		{"above the ceiling", capped, mtSet(2, mt0, map[string]float64{"gold": 0.9}), `tier "gold": multiplier 0.9 must be in (0, 0.8]`},
		{"empty tier name", p, mtSet(2, mt0, tiers("", 0.5)), `tier name ""`},
		{"reserved tier name", p, mtSet(2, mt0, tiers("_epoch", 0.5)), `tier name "_epoch"`},
		{"zero at", p, mtSet(2, time.Time{}, tiers()), "at is zero"},
		{"epoch beyond 2^53", p, mtSet(1<<53+1, mt0, tiers()), "epoch 9007199254740993 exceeds 2^53"},
	}
	check := func(t *testing.T) {
		t.Helper()
		for _, tc := range cases {
			err := tc.p.Publish(ctx, tc.m)
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err %v, want ErrInvalid containing %q", tc.name, err, tc.want)
			}
		}
	}
	check(t)
	if n, err := c.Exists(ctx, p.Key()).Result(); n != 0 || err != nil {
		t.Fatalf("after invalid publishes only: EXISTS = %d, %v; want 0", n, err)
	}
	next := mtListen(t, c, p.Key())
	good := mtSet(1, mt0, tiers("free", 0.5))
	mtPublish(t, p, good)
	next()
	check(t) // with a publication in place: it stays as it was
	if got, _, _ := p.Load(ctx); !mtSame(got, good) {
		t.Fatalf("after invalid publishes, Load = %+v, want %+v", got, good)
	}
	good3 := mtSet(3, mt0, tiers("free", 0.25))
	mtPublish(t, p, good3)
	if got := next(); !mtSame(got, good3) {
		t.Fatalf("message %+v, want %+v: an invalid set was announced", got, good3)
	}
}

// mtPubSubPath: with a poll interval of an hour, only pub/sub can deliver.
func mtPubSubPath(t *testing.T, c redis.UniversalClient) {
	s := mtSettings(Settings{PollInterval: time.Hour})
	p := mtPublisher(t, c, s)
	mtPublish(t, p, mtSet(1, time.Now(), map[string]float64{"free": 0.5}))
	sub := mtRun(t, c, s)
	mtWait(t, 10*time.Second, "subscribed, with epoch 1 from the first poll", func() bool {
		snap := sub.Snapshot()
		return snap.Subscribed && snap.Epoch == 1
	})
	mtPublish(t, p, mtSet(2, time.Now(), map[string]float64{"free": 0.25, "premium": 0.9}))
	mtWait(t, time.Second, "epoch 2 through pub/sub", func() bool { return sub.Multiplier("free") == 0.25 })
	snap := sub.Snapshot()
	if snap.Origin != OriginRedis || snap.Epoch != 2 || sub.Multiplier("premium") != 0.9 || sub.Multiplier("other") != 1 {
		t.Fatalf("snapshot %+v; premium %v, other %v", snap, sub.Multiplier("premium"), sub.Multiplier("other"))
	}
}

// mtPollPath: without a subscription, the poll alone delivers within one
// poll period (plus 500 ms for scheduling on a loaded machine).
func mtPollPath(t *testing.T, c redis.UniversalClient) {
	s := mtSettings(Settings{PollInterval: 300 * time.Millisecond, PollOnly: true})
	p := mtPublisher(t, c, s)
	mtPublish(t, p, mtSet(1, time.Now(), map[string]float64{"free": 0.5}))
	sub := mtRun(t, c, s)
	mtWait(t, 10*time.Second, "epoch 1 from the first poll", func() bool { return sub.Multiplier("free") == 0.5 })
	mtPublish(t, p, mtSet(2, time.Now(), map[string]float64{"free": 0.25}))
	mtWait(t, s.PollInterval+500*time.Millisecond, "epoch 2 by polling", func() bool { return sub.Multiplier("free") == 0.25 })
	if sub.Snapshot().Subscribed {
		t.Fatal("a PollOnly subscriber subscribed")
	}
}

func TestMultipliersSettings(t *testing.T) {
	d, err := Settings{}.withDefaults()
	if err != nil || d.Prefix != "throttled:" || d.MaxMultiplier != 1 || d.PollInterval != time.Second ||
		d.StaleAfter != 15*time.Second || d.Now == nil || d.Logger == nil || d.key() != "throttled:multipliers" {
		t.Fatalf("defaults %+v, %v", d, err)
	}
	for _, tc := range []struct {
		s    Settings
		want string
	}{
		{Settings{MaxMultiplier: -1}, "max multiplier -1"},
		{Settings{MaxMultiplier: math.NaN()}, "max multiplier NaN"},
		{Settings{MaxMultiplier: math.Inf(1)}, "max multiplier +Inf"},
		{Settings{PollInterval: -time.Second}, "poll interval -1s"},
		{Settings{StaleAfter: time.Microsecond}, "stale after 1µs"},
	} {
		_, err := NewPublisher(nil, tc.s)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want ErrInvalid containing %q", tc.s, err, tc.want)
		}
		if _, err2 := NewSubscriber(nil, tc.s, nil); err2 == nil || err2.Error() != err.Error() {
			t.Errorf("%+v: subscriber err %v, want %v", tc.s, err2, err)
		}
	}
}

func TestMultipliersLoadRejectsCorruptHash(t *testing.T) {
	c := testenv.StartRedis(t).Client()
	ctx := context.Background()
	p := mtPublisher(t, c, mtSettings(Settings{}))
	for _, tc := range []struct {
		hash []any
		want error
		text string
	}{
		{[]any{"free", "0.5", "_at", "1"}, ErrBadReply, "_epoch"},
		{[]any{"free", "0.5", "_epoch", "1"}, ErrBadReply, "_at"},
		{[]any{"free", "0.5", "_epoch", "1", "_at", "0"}, ErrBadReply, "_at: 0 is not after 1970"},
		{[]any{"free", "half", "_epoch", "1", "_at", "1"}, ErrBadReply, `tier "free"`},
		{[]any{"free", "7", "_epoch", "1", "_at", "1"}, ErrInvalid, `tier "free": multiplier 7`},
	} {
		c.Del(ctx, p.Key())
		c.HSet(ctx, p.Key(), tc.hash...)
		_, found, err := p.Load(ctx)
		if found || !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
			t.Errorf("hash %v: found %v, err %v; want %v containing %q", tc.hash, found, err, tc.want, tc.text)
		}
	}
	// A corrupt hash does not block the controller: the next publish replaces it.
	c.HSet(ctx, p.Key(), "_epoch", "garbage")
	m := mtSet(1, mt0, map[string]float64{"free": 0.5})
	mtPublish(t, p, m)
	if got, found, err := p.Load(ctx); !found || err != nil || !mtSame(got, m) {
		t.Fatalf("after replacing a corrupt hash, Load = %+v, %v, %v", got, found, err)
	}
}

// mtRates: a tier's rate cap travels with the multipliers through the hash
// (Load, poll) and through pub/sub, and is gone once a set without it is
// published; an invalid cap is refused with nothing written.
func mtRates(t *testing.T, c redis.UniversalClient) {
	ctx := context.Background()
	s := mtSettings(Settings{PollInterval: time.Hour})
	p := mtPublisher(t, c, s)
	m := mtSet(1, time.Now(), map[string]float64{"free": 0.5, "premium": 1})
	m.Rates = map[string]float64{"free": 123.5}
	mtPublish(t, p, m)
	got, found, err := p.Load(ctx)
	if err != nil || !found || got.Rates["free"] != 123.5 || len(got.Rates) != 1 {
		t.Fatalf("Load = %+v, %v, %v; want free's rate 123.5 only", got, found, err)
	}
	sub := mtRun(t, c, s)
	mtWait(t, 10*time.Second, "free capped at 123.5 from the first poll", func() bool { return sub.Rate("free") == 123.5 })
	if r := sub.Rate("premium"); r != 0 {
		t.Fatalf("premium rate %v, want 0 (not capped)", r)
	}
	m2 := mtSet(2, time.Now(), map[string]float64{"free": 0.25})
	m2.Rates = map[string]float64{"free": 40}
	mtPublish(t, p, m2)
	mtWait(t, time.Second, "free capped at 40 through pub/sub", func() bool { return sub.Rate("free") == 40 })
	mtPublish(t, p, mtSet(3, time.Now(), map[string]float64{"free": 1}))
	mtWait(t, time.Second, "the cap lifted through pub/sub", func() bool { return sub.Rate("free") == 0 })
	if got, _, _ := p.Load(ctx); got.Rates != nil {
		t.Fatalf("after a set without caps, Load has rates %v", got.Rates)
	}
	bad := mtSet(4, time.Now(), map[string]float64{"free": 1})
	bad.Rates = map[string]float64{"free": -1}
	if err := p.Publish(ctx, bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `tier "free": rate -1`) {
		t.Fatalf("Publish with rate -1 = %v, want ErrInvalid naming the tier and rate", err)
	}
	if got, _, _ := p.Load(ctx); got.Epoch != 3 {
		t.Fatalf("a refused publish wrote: epoch %d", got.Epoch)
	}
}
