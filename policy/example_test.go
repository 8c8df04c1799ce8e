package policy_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/throttledhq/throttled/policy"
)

func ExampleValidateConfig() {
	cfg := policy.Config{
		Tiers: map[string]policy.Tier{
			"free": {Rate: 10, Period: policy.Duration(time.Second), Beta: 1.5},
		},
	}
	fmt.Println(policy.ValidateConfig(cfg))
	// Output: policy: tiers.free.beta: 1.5: want a number in (0, 1), or 0 for the default
}

func ExampleDuration() {
	var t policy.Tier
	err := json.Unmarshal([]byte(`{"rate": 5, "period": "250ms"}`), &t)
	fmt.Println(t.Period.D(), err)
	err = json.Unmarshal([]byte(`{"rate": 5, "period": "-1s"}`), &t)
	fmt.Println(err)
	// Output:
	// 250ms <nil>
	// policy: duration "-1s" must not be negative
}

// A configuration compiles to the policy enforcement runs: tiers by name
// with their defaults, rules in order.
func ExampleCompile() {
	cfg := policy.Config{
		Tiers: map[string]policy.Tier{
			"premium": {Rate: 100, Period: policy.Duration(time.Second), Priority: 0},
			"free":    {Rate: 10, Period: policy.Duration(time.Second), Priority: 1},
		},
		Rules: []policy.Rule{{Name: "api", Match: policy.Match{Path: "/api"}, Key: policy.KeySources{"api_key"}}},
	}
	p, err := policy.Compile(cfg)
	fmt.Println(p.Tiers[0].Name, p.Tiers[0].Algorithm, p.Tiers[1].Name, p.Rules[0].Keys, err, p.Validate())
	// Output: free token_bucket premium [api_key] <nil> <nil>
}
