package config

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// limit is the range of one field of Config. Validation applies it and
// `throttled config schema` publishes it: configLimits is the one place the
// ranges of the file are written (those of tiers and rules are
// policy.TierBounds and policy.RuleBounds).
type limit struct {
	min, max       float64 // numbers; ±Inf: no bound
	exclusive      bool    // min and max themselves are refused
	minDur, maxDur time.Duration
	enum           []string
	msg            string // the error; "" says the range
}

func between(lo, hi float64) limit { return limit{min: lo, max: hi} }
func atLeast(lo float64) limit     { return limit{min: lo, max: math.Inf(1)} }
func durations(lo, hi time.Duration) limit {
	return limit{min: math.Inf(-1), max: math.Inf(1), minDur: lo, maxDur: hi}
}

// configLimits are the ranges of the fields of Config by YAML path ("*"
// stands for a map key). Relations between fields (lease_ttl > period,
// min_limit ≤ max_limit) are checked in validate.
var configLimits = map[string]limit{
	"upstream_timeout":              durations(time.Millisecond, time.Hour),
	"controller.period":             durations(100*time.Millisecond, time.Hour),
	"controller.error_ratio_target": {min: 0, max: 1, exclusive: true, msg: "want a ratio in (0, 1)"},
	"controller.saturation_target":  atLeast(0),
	"controller.headroom": {min: 0, max: 1, exclusive: true,
		msg: "want (0, 1): 0 would leave no band between healthy and overloaded (omit it for the default 0.1)"},
	"fallback.instances":                    between(0, 10000),
	"fallback.deadline":                     durations(0, 10*time.Second),
	"fallback.consecutive_failures":         between(1, 1000),
	"fallback.open_timeout":                 durations(time.Millisecond, time.Hour),
	"log.level":                             {enum: []string{"debug", "info", "warn", "error"}},
	"route_bulkheads.*.limit":               between(1, 1_000_000),
	"route_bulkheads.*.queue":               atLeast(0),
	"bulkheads.*.limit":                     between(1, 1_000_000),
	"bulkheads.*.queue":                     atLeast(0),
	"upstream_breaker.consecutive_failures": atLeast(0),
	"identity.ipv6_prefix":                  {min: 0, max: 128, msg: "want 1..128 (0: 64)"},
}

// check returns what is wrong with v, or "".
func (l limit) check(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	bad := false
	switch {
	case v.Type() == durationType:
		d := time.Duration(v.Int())
		bad = d < l.minDur || (l.maxDur > 0 && d > l.maxDur)
	case v.Kind() == reflect.String:
		bad = len(l.enum) > 0 && !contains(l.enum, v.String())
	case v.CanInt():
		bad = l.outside(float64(v.Int()))
	case v.CanFloat():
		bad = l.outside(v.Float()) || math.IsNaN(v.Float())
	}
	if bad {
		return l.message()
	}
	return ""
}

func (l limit) outside(x float64) bool {
	if l.exclusive {
		return x <= l.min || x >= l.max
	}
	return x < l.min || x > l.max
}

func (l limit) message() string {
	switch {
	case l.msg != "":
		return l.msg
	case len(l.enum) > 0:
		return "want " + strings.Join(l.enum[:len(l.enum)-1], ", ") + " or " + l.enum[len(l.enum)-1]
	case l.maxDur > 0 && l.minDur == 0:
		return "want at most " + shortDur(l.maxDur)
	case l.maxDur > 0:
		return "want " + shortDur(l.minDur) + ".." + shortDur(l.maxDur)
	case math.IsInf(l.max, 1) && l.min == 0:
		return "must not be negative"
	}
	return "want " + strconv.FormatFloat(l.min, 'f', -1, 64) + ".." + strconv.FormatFloat(l.max, 'f', -1, 64)
}

// shortDur writes 1h rather than 1h0m0s.
func shortDur(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// checkLimits applies configLimits to every field of c.
func (c *Config) checkLimits() []fieldErr {
	var errs []fieldErr
	walkLimits(reflect.ValueOf(c).Elem(), "", "", &errs)
	return errs
}

func walkLimits(v reflect.Value, path, pattern string, errs *[]fieldErr) {
	if l, ok := configLimits[pattern]; ok {
		if msg := l.check(v); msg != "" {
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
