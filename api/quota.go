package api

import (
	"strconv"
	"time"
)

// MaxLimits bounds a rule's limits.
const MaxLimits = 8

// calendarPeriods are the periods align calendar accepts.
var calendarPeriods = []Duration{Duration(time.Minute), Duration(time.Hour), Duration(24 * time.Hour), Month}

// checkAlign validates the align of a tier, rule or limit at path p.
func checkAlign(p, align, algorithm string, period Duration) error {
	switch {
	case align == "" || align == aligns[0]:
		return nil
	case !contains(aligns, align):
		return fieldErr(p+".align", "%q: want %s", align, quoteList(aligns))
	case algorithm != "fixed_window":
		if algorithm == "" {
			algorithm = algorithms[0] + " (the default)"
		}
		return fieldErr(p+".align", "calendar windows need algorithm fixed_window, not %s", algorithm)
	}
	for _, c := range calendarPeriods {
		if period == c {
			return nil
		}
	}
	return fieldErr(p+".period", "%v: calendar windows are 1m, 1h, 24h or 1mo", period)
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
	if len(r.Limits) > MaxLimits {
		errs.add(fieldErr(p+".limits", "%d limits: at most %d", len(r.Limits), MaxLimits))
	}
	b := ruleBounds
	for i, l := range r.Limits {
		lp := p + ".limits[" + strconv.Itoa(i) + "]"
		var le errList
		le.add(rng(1, MaxRate).checkInt(lp+".limit", l.Limit), b["algorithm"].checkEnum(lp+".algorithm", l.Algorithm),
			b["period"].checkDur(lp+".period", l.Period), b["burst"].checkInt(lp+".burst", l.Burst))
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
