package limiter

import (
	"math"
	"time"

	"github.com/throttledhq/throttled/internal/enum"
)

// Align says where a FixedWindow rule's windows start. The zero value is
// AlignPeriod.
type Align uint8

// Alignments.
const (
	// AlignPeriod: windows start at multiples of Period since the Unix
	// epoch (for 1m, 1h and 24h that is the start of each UTC minute,
	// hour and day).
	AlignPeriod Align = iota
	// AlignCalendar: windows are UTC calendar units: Period is Minute,
	// Hour, Day or Month, and a day quota resets at 00:00 UTC, a month
	// quota at 00:00 UTC on the 1st. Only FixedWindow aligns so.
	AlignCalendar
)

var alignNames = enum.New[Align]("limiter", "alignment", "period", "calendar")

func (a Align) String() string { return alignNames.String(a) }

// AlignNames lists the alignments' names, the first the default.
func AlignNames() []string { return alignNames.Names() }

// ParseAlign reads an alignment name as printed by String; "" means
// AlignPeriod.
func ParseAlign(s string) (Align, error) {
	if s == "" {
		return AlignPeriod, nil
	}
	return alignNames.Parse(s)
}

// The periods of calendar windows. Month stands for the calendar month
// (28 to 31 days) when the rule has AlignCalendar; it is the nominal 30
// days that headers report as the window.
const (
	Minute = time.Minute
	Hour   = time.Hour
	Day    = 24 * time.Hour
	Month  = 30 * Day
)

// CalendarPeriods lists the periods AlignCalendar accepts.
var CalendarPeriods = [4]time.Duration{Minute, Hour, Day, Month}

// validateAlign reports a rule whose alignment cannot apply.
func (r Rule) validateAlign() string {
	switch {
	case !alignNames.Valid(r.Align):
		return "alignment unknown"
	case r.Align == AlignPeriod:
		return ""
	case r.Algorithm != FixedWindow:
		return "align calendar needs algorithm fixed_window, not " + r.Algorithm.String()
	}
	for _, p := range CalendarPeriods {
		if r.Period == p {
			return ""
		}
	}
	return "align calendar needs period 1m, 1h, 24h or 720h (the calendar month), not " + r.Period.String()
}

// CalendarMonth reports whether r counts in calendar months.
func (r Rule) CalendarMonth() bool { return r.Align == AlignCalendar && r.Period == Month }

// window is the fixed window holding now, [start, end), in µs: a multiple
// of the period, or the UTC calendar month holding now.
func window(now float64, p params) (start, end float64) {
	if !p.month {
		start = math.Floor(now/p.period) * p.period
		return start, start + p.period
	}
	y, m, _ := time.UnixMicro(int64(now)).UTC().Date()
	return float64(time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).UnixMicro()),
		float64(time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC).UnixMicro())
}
