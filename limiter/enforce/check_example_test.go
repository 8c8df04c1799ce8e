package enforce_test

import (
	"context"
	"fmt"
	"time"

	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// A gateway asks for a key without an HTTP request: the rule's quota, the
// key's tier and the answer are the middleware's.
func ExampleEnforcer_CheckKeys() {
	e, err := enforce.New(limiter.NewMemory(), enforce.Policy{
		Tiers: []enforce.Tier{{Name: "free", Limit: 2, Period: time.Minute, Burst: 2}},
		Rules: []enforce.Rule{{Name: "per-key", Path: "/", Keys: []string{"api_key"}}},
	}, enforce.Settings{})
	if err != nil {
		panic(err)
	}
	for range 3 {
		res, _ := e.CheckKeys(context.Background(), []enforce.Query{{Rule: "per-key", Key: "alice"}}, nil)
		fmt.Println(res.Allowed, res.Reason(), res.Tier, res.Decision.Remaining, res.Status)
	}
	_, err = e.CheckKeys(context.Background(), []enforce.Query{{Rule: "per-ip", Key: "alice"}}, nil)
	fmt.Println(err)
	// Output:
	// true allowed free 1 0
	// true allowed free 0 0
	// false over_quota free 0 429
	// enforce: query 0: rule: no such rule "per-ip"
}
