package coord

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// An instance applies its own published factor of a tier in place of the
// fleet's, through pub/sub and through the poll, on one Redis and on a
// cluster; another instance, and one without an id, apply the fleet's. A
// set published without the instance's entry (the instance left the
// leader's reading) puts it back on the fleet's.
func TestSubscriberAppliesItsOwnFactors(t *testing.T) {
	r := testenv.StartRedis(t)
	cl := testenv.StartCluster(t)
	for _, b := range []struct {
		name string
		c    redis.UniversalClient
	}{{"redis", r.Client()}, {"cluster", cl.Client(t)}} {
		for _, path := range []struct {
			name string
			s    Settings
		}{{"pubsub", Settings{PollInterval: time.Hour}}, {"poll", Settings{PollInterval: 100 * time.Millisecond, PollOnly: true}}} {
			t.Run(b.name+"/"+path.name, func(t *testing.T) { mtOwnFactors(t, b.c, mtSettings(path.s)) })
		}
	}
}

func mtOwnFactors(t *testing.T, c redis.UniversalClient, s Settings) {
	p := mtPublisher(t, c, s)
	fleet := map[string]float64{"free": 0.25, "premium": 1}
	m := mtSet(1, time.Now(), fleet)
	m.Instances = map[string]map[string]float64{"fine": {"free": 1}, "warm": {"free": 0.5, "premium": 0.9}}
	mtPublish(t, p, m)
	subs := map[string]*Subscriber{}
	for _, id := range []string{"fine", "warm", "other", ""} {
		si := s
		si.Instance = id
		subs[id] = mtRun(t, c, si)
	}
	want := map[string][2]float64{"fine": {1, 1}, "warm": {0.5, 0.9}, "other": {0.25, 1}, "": {0.25, 1}}
	for id, w := range want {
		mtWait(t, 10*time.Second, "instance "+id+"'s factors", func() bool {
			return subs[id].Multiplier("free") == w[0] && subs[id].Multiplier("premium") == w[1]
		})
	}
	if got := subs["warm"].Snapshot().Tiers; got["free"] != 0.5 || got["premium"] != 0.9 {
		t.Fatalf("warm's snapshot %v, want its own free 0.5 and premium 0.9 (what it applies)", got)
	}
	if got, _, err := p.Load(context.Background()); err != nil || got.Instances["warm"]["premium"] != 0.9 || got.Instances["fine"]["free"] != 1 {
		t.Fatalf("Load: instances %v, err %v; want fine's and warm's entries", got.Instances, err)
	}
	m = mtSet(2, time.Now(), fleet)
	m.Instances = map[string]map[string]float64{"warm": {"free": 0.5}}
	mtPublish(t, p, m)
	mtWait(t, 5*time.Second, "fine back on the fleet's free 0.25, warm's premium back on the fleet's 1", func() bool {
		return subs["fine"].Multiplier("free") == 0.25 && subs["warm"].Multiplier("premium") == 1 && subs["warm"].Multiplier("free") == 0.5
	})
	mtPublish(t, p, mtSet(3, time.Now(), fleet))
	if ids, err := c.SMembers(context.Background(), ownIDsKey(p.Key())).Result(); err != nil || len(ids) != 0 {
		t.Fatalf("ids with own factors after a set without any: %v, %v; want none", ids, err)
	}
}

// An own hash of the set's publication is read, one of an older
// publication adds nothing, and a bad own factor is an error, as a bad
// tier is.
func TestOwnFactorParsing(t *testing.T) {
	m := multiplier.Set{At: time.UnixMilli(1700000000000), Tiers: map[string]float64{"free": 0.5}}
	if err := parseOwnHash(&m, "i-1", map[string]string{multFieldAt: "1700000000000", "free": "1"}); err != nil ||
		m.Instances["i-1"]["free"] != 1 {
		t.Fatalf("parse = %+v, %v; want i-1's free 1", m.Instances, err)
	}
	if err := parseOwnHash(&m, "i-2", map[string]string{multFieldAt: "1699999995000", "free": "1"}); err != nil ||
		m.Instances["i-2"] != nil {
		t.Fatalf("parse of an older own hash = %+v, %v; want nothing added", m.Instances, err)
	}
	if err := parseOwnHash(&m, "i-1", map[string]string{multFieldAt: "1700000000000", "free": "x"}); err == nil {
		t.Fatal("parse of a non-number own factor: no error")
	}
	bad := multiplier.Set{At: time.Now(), Instances: map[string]map[string]float64{"i": {"free": 2}}}
	if err := bad.Validate(1); err == nil {
		t.Fatal("an own factor above max validated")
	}
}

// What every instance reads stays the size of the fleet's tiers however
// many instances have factors of their own: the fleet's hash and message
// hold none of them; each instance's own hash holds its own, expiring.
func TestOwnFactorsStayOutOfTheFleetsHash(t *testing.T) {
	r := testenv.StartRedis(t)
	c := r.Client()
	s := mtSettings(Settings{PollInterval: time.Hour})
	p := mtPublisher(t, c, s)
	ctx := context.Background()
	ps := c.Subscribe(ctx, p.Key())
	t.Cleanup(func() { _ = ps.Close() })
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	m := mtSet(1, time.Now(), map[string]float64{"free": 0.25, "premium": 1})
	m.Instances = map[string]map[string]float64{}
	for i := range 50 {
		m.Instances[fmt.Sprintf("i-%d", i)] = map[string]float64{"free": 1, "premium": 0.5}
	}
	mtPublish(t, p, m)
	h, err := c.HGetAll(ctx, p.Key()).Result()
	if err != nil || len(h) > 8 {
		t.Fatalf("fleet hash has %d fields (%v), want at most 8: no instance's", len(h), err)
	}
	msg, err := ps.ReceiveMessage(ctx)
	if err != nil || len(msg.Payload) > 200 || strings.Contains(msg.Payload, "i-") {
		t.Fatalf("fleet message %q (%v), want one without the instances' factors", msg.Payload, err)
	}
	own := ownKey(p.Key(), "i-7")
	if v, err := c.HGet(ctx, own, "premium").Result(); err != nil || v != "0.5" {
		t.Fatalf("%s premium = %q, %v; want 0.5", own, v, err)
	}
	if ttl, err := c.PTTL(ctx, own).Result(); err != nil || ttl <= 0 || ttl > p.s.StaleAfter {
		t.Fatalf("%s expires in %v (%v), want within StaleAfter %v", own, ttl, err, p.s.StaleAfter)
	}
}
