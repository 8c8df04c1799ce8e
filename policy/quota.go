package policy

import (
	"slices"
	"strconv"

	"github.com/throttledhq/throttled/limiter"
)

// checkAlign validates the align of a tier, rule or limit at path p, whose
// algorithm is valid: calendar windows need fixed_window and one of
// limiter.CalendarPeriods.
func checkAlign(p, align, algorithm string, period Duration) error {
	a, err := limiter.ParseAlign(align)
	switch {
	case err != nil:
		return fieldErr(p+".align", "%q: want %s", align, quoteList(aligns))
	case a == limiter.AlignPeriod:
		return nil
	case algorithmOf(algorithm) != limiter.FixedWindow:
		if algorithm == "" {
			algorithm = limiter.TokenBucket.String() + " (the default)"
		}
		return fieldErr(p+".align", "calendar windows need algorithm %v, not %s", limiter.FixedWindow, algorithm)
	case slices.Contains(limiter.CalendarPeriods[:], period.D()):
		return nil
	}
	return fieldErr(p+".period", "%v: calendar windows are 1m, 1h, 24h or 1mo", period)
}

// algorithmOf is the algorithm named s, already validated ("": the default).
func algorithmOf(s string) limiter.Algorithm {
	a, _ := limiter.ParseAlgorithm(s)
	return a
}

// capacity is the most one key can spend at once under a limit
// (limiter.Rule.Capacity).
func capacity(limit, burst int64, algorithm string) int64 {
	return limiter.Rule{Algorithm: algorithmOf(algorithm), Limit: limit, Burst: burst}.Capacity()
}

// validateLimits checks a rule with several limits: none of the single
// limit's fields, 1..MaxLimits valid limits, a cost within each. It
// reports every problem.
func validateLimits(p string, r Rule) []error {
	var errs errList
	for _, f := range []struct {
		name string
		set  bool
	}{{"limit", r.Limit != 0}, {"algorithm", r.Algorithm != ""}, {"period", r.Period != 0}, {"burst", r.Burst != 0},
		{"align", r.Align != ""}} {
		if f.set {
			errs.add(fieldErr(p+"."+f.name, "set with limits: give each limit its own, in limits"))
		}
	}
	b := ruleBounds
	if n := b["limits"].MaxItems; len(r.Limits) > n {
		errs.add(fieldErr(p+".limits", "%d limits: at most %d", len(r.Limits), n))
	}
	for i, l := range r.Limits {
		lp := p + ".limits[" + strconv.Itoa(i) + "]"
		var le errList
		le.add(checkNum(b["limits.limit"], lp+".limit", l.Limit),
			b["limits.algorithm"].checkEnum(lp+".algorithm", l.Algorithm),
			b["limits.period"].checkDur(lp+".period", l.Period), checkNum(b["limits.burst"], lp+".burst", l.Burst))
		if len(le) == 0 {
			le.add(checkAlign(lp, l.Align, l.Algorithm, l.Period))
		}
		if c := capacity(l.Limit, l.Burst, l.Algorithm); len(le) == 0 && r.Cost > c {
			le.add(fieldErr(p+".cost", "%d exceeds the capacity %d of limits[%d]", r.Cost, c, i))
		}
		errs.add(le...)
	}
	return errs
}
