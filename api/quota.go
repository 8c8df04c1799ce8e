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
// limit's fields, 1..MaxLimits valid limits, a cost within each.
func validateLimits(p string, r Rule) error {
	for _, f := range []struct {
		name string
		set  bool
	}{{"limit", r.Limit != 0}, {"algorithm", r.Algorithm != ""}, {"period", r.Period != 0}, {"burst", r.Burst != 0},
		{"align", r.Align != ""}} {
		if f.set {
			return fieldErr(p+"."+f.name, "set with limits: give each limit its own, in limits")
		}
	}
	if len(r.Limits) > MaxLimits {
		return fieldErr(p+".limits", "%d limits: at most %d", len(r.Limits), MaxLimits)
	}
	for i, l := range r.Limits {
		lp := p + ".limits[" + strconv.Itoa(i) + "]"
		if err := checkInt(lp+".limit", l.Limit, 1, MaxRate); err != nil {
			return err
		}
		if l.Algorithm != "" && !contains(algorithms, l.Algorithm) {
			return fieldErr(lp+".algorithm", "%q: want %s", l.Algorithm, quoteList(algorithms))
		}
		if err := checkPeriod(lp+".period", l.Period); err != nil {
			return err
		}
		if err := checkInt(lp+".burst", l.Burst, 0, MaxRate); err != nil {
			return err
		}
		if err := checkAlign(lp, l.Align, l.Algorithm, l.Period); err != nil {
			return err
		}
		if c := capacity(l.Limit, l.Burst, l.Algorithm); r.Cost > c {
			return fieldErr(p+".cost", "%d exceeds the capacity %d of limits[%d]", r.Cost, c, i)
		}
	}
	return nil
}
