package config

import (
	"reflect"
	"time"

	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/policy"
)

// configLimits are the bounds of the fields of Config by YAML path ("*"
// stands for a map key): the one place the ranges of the file are written
// (those of tiers and rules are policy.TierBounds and policy.RuleBounds).
// Validation applies them (Bound.Check), once the defaults are filled: a
// Required field is one a default fills, which the file may leave out but
// a Config built in code may not. `throttled config schema` publishes them
// (Bound.Schema). Relations between fields (lease_ttl > period, min_limit ≤
// max_limit) are checked in validate.
var configLimits = map[string]policy.Bound{
	"upstream_timeout":                      policy.Durations(time.Millisecond, time.Hour),
	"shutdown_delay":                        policy.Durations(0, 10*time.Minute),
	"max_body_bytes":                        saying(policy.AtLeast(0), "want a positive number of bytes (0: the default, 10 MiB)"),
	"controller.period":                     policy.Durations(100*time.Millisecond, time.Hour),
	"controller.error_ratio_target":         saying(open(0, 1), "want a ratio in (0, 1)"),
	"controller.saturation_target":          policy.AtLeast(0),
	"controller.headroom":                   saying(open(0, 1), headroomWant),
	"controller.scope":                      {Enum: controller.ScopeNames},
	"fallback.instances":                    policy.Between(0, 10000),
	"fallback.deadline":                     policy.Durations(0, 10*time.Second),
	"fallback.consecutive_failures":         policy.Between(1, 1000),
	"fallback.open_timeout":                 policy.Durations(time.Millisecond, time.Hour),
	"log.level":                             {Enum: []string{"debug", "info", "warn", "error"}, Required: true},
	"route_bulkheads.*.limit":               policy.Between(1, 1_000_000),
	"route_bulkheads.*.queue":               policy.AtLeast(0),
	"bulkheads.*.limit":                     policy.Between(1, 1_000_000),
	"bulkheads.*.queue":                     policy.AtLeast(0),
	"upstream_breaker.consecutive_failures": policy.AtLeast(0),
	"identity.ipv6_prefix":                  saying(policy.Between(0, 128), "want 1..128 (0: 64)"),
}

const headroomWant = "want (0, 1): 0 would leave no band between healthy and overloaded (omit it for the default 0.1)"

// open bounds a number to (lo, hi).
func open(lo, hi float64) policy.Bound {
	b := policy.Between(lo, hi)
	b.ExclusiveMin, b.ExclusiveMax = true, true
	return b
}

// saying is b with msg as its error.
func saying(b policy.Bound, msg string) policy.Bound {
	b.Msg = msg
	return b
}

// checkLimits applies configLimits to every field of c.
func (c *Config) checkLimits() []fieldErr {
	var errs []fieldErr
	walkLimits(reflect.ValueOf(c).Elem(), "", "", &errs)
	return errs
}

func walkLimits(v reflect.Value, path, pattern string, errs *[]fieldErr) {
	if b, ok := configLimits[pattern]; ok {
		if msg := b.Check(v); msg != "" {
			*errs = append(*errs, fieldErr{path, msg})
		}
		return
	}
	switch {
	case v.Kind() == reflect.Struct && v.Type() != durationType:
		for i := 0; i < v.NumField(); i++ {
			name := yamlName(v.Type().Field(i))
			walkLimits(v.Field(i), joinPath(path, name), joinPath(pattern, name), errs)
		}
	case v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String:
		for _, k := range v.MapKeys() {
			walkLimits(v.MapIndex(k), joinPath(path, k.String()), joinPath(pattern, "*"), errs)
		}
	}
}
