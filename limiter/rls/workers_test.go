package rls

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// TestWorkersSetting: Workers below -1 is a configuration error naming the
// field; 0 is DefaultWorkers, -1 no workers.
func TestWorkersSetting(t *testing.T) {
	e := tenPerMinute(t)
	if _, err := New(e, Settings{Workers: -2}, nil); !errors.Is(err, ErrBadConfig) || !strings.Contains(err.Error(), "Workers -2") {
		t.Errorf("Workers -2: %v, want ErrBadConfig naming Workers", err)
	}
	for n, want := range map[int]int{0: DefaultWorkers, 3: 3, -1: 0} {
		s, err := New(e, Settings{Workers: n}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		if s.work != nil {
			got = cap(s.work.slots)
		}
		if got != want {
			t.Errorf("Workers %d: %d workers at most, want %d", n, got, want)
		}
	}
}

// TestWorkersDecideExactly: 40 concurrent calls for one key of 10 a minute
// get exactly 10 OK whether they are decided on their own goroutines
// (Workers -1), mostly on workers (64) or partly on the one worker and
// partly on their own goroutines (1); with the server shut down, every
// worker has ended.
func TestWorkersDecideExactly(t *testing.T) {
	for _, n := range []int{-1, 1, 64} {
		srv, err := New(tenPerMinute(t), Settings{Workers: n}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var oks, overs atomic.Int32
		var wg sync.WaitGroup
		req := &rlsv3.RateLimitRequest{Domain: DefaultDomain, Descriptors: []*ratelimitv3.RateLimitDescriptor{{
			Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: EntryRule, Value: "per-key"}, {Key: "api_key", Value: "k"}}}}}
		for range 40 {
			wg.Go(func() {
				r, err := srv.ShouldRateLimit(context.Background(), req)
				switch {
				case err != nil:
					t.Errorf("Workers %d: %v", n, err)
				case r.GetOverallCode() == rlsv3.RateLimitResponse_OK:
					oks.Add(1)
				default:
					overs.Add(1)
				}
			})
		}
		wg.Wait()
		if oks.Load() != 10 || overs.Load() != 30 {
			t.Errorf("Workers %d: %d OK, %d OVER_LIMIT; want 10 and 30", n, oks.Load(), overs.Load())
		}
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if srv.work != nil {
			testenv.WaitFor(t, 10*time.Second, "every worker ended", func() bool { return len(srv.work.slots) == 0 })
		}
	}
}

func tenPerMinute(t *testing.T) *enforce.Enforcer {
	t.Helper()
	e, err := enforce.New(limiter.NewMemory(), enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: 10, Period: time.Minute, Burst: 10, Priority: 1}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}}},
	}, enforce.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}
