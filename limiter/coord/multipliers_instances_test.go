package coord

import (
	"context"
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
	if got, _, err := p.Load(context.Background()); err != nil || got.Instances["warm"]["premium"] != 0.9 || got.Instances["fine"]["free"] != 1 {
		t.Fatalf("Load: instances %v, err %v; want fine's and warm's entries", got.Instances, err)
	}
	m = mtSet(2, time.Now(), fleet)
	m.Instances = map[string]map[string]float64{"warm": {"free": 0.5}}
	mtPublish(t, p, m)
	mtWait(t, 5*time.Second, "fine back on the fleet's free 0.25, warm's premium back on the fleet's 1", func() bool {
		return subs["fine"].Multiplier("free") == 0.25 && subs["warm"].Multiplier("premium") == 1 && subs["warm"].Multiplier("free") == 0.5
	})
}

// A message or hash with a bad own factor is refused whole, as a bad tier
// is.
func TestOwnFactorParsing(t *testing.T) {
	m, err := parseMultiplierHash(map[string]string{multFieldEpoch: "3", multFieldAt: "1700000000000", "free": "0.5", "free@i-1": "1"})
	if err != nil || m.Instances["i-1"]["free"] != 1 || m.Tiers["free"] != 0.5 || len(m.Tiers) != 1 {
		t.Fatalf("parse = %+v, %v; want free 0.5 and i-1's free 1", m, err)
	}
	if _, err := parseMultiplierHash(map[string]string{multFieldEpoch: "3", multFieldAt: "1700000000000", "free@i-1": "x"}); err == nil {
		t.Fatal("parse of a non-number own factor: no error")
	}
	bad := multiplier.Set{At: time.Now(), Instances: map[string]map[string]float64{"i": {"free": 2}}}
	if err := bad.Validate(1); err == nil {
		t.Fatal("an own factor above max validated")
	}
}
