package redisstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/fakeclock"
	"github.com/throttledhq/throttled/limiter"
)

// utc is an instant in UTC, to the microsecond.
func utc(y int, mo time.Month, d, h, mi, s, us int) time.Time {
	return time.Date(y, mo, d, h, mi, s, us*1000, time.UTC)
}

const day = 24 * time.Hour

// calendarRule is a calendar-aligned fixed window of limit per period.
func calendarRule(limit int64, period time.Duration) limiter.Rule {
	return limiter.Rule{Algorithm: limiter.FixedWindow, Limit: limit, Period: period, Align: limiter.AlignCalendar}
}

// The calendar windows at fixed instants t0..t9, on every store: a day
// quota resets at 00:00 UTC, a month quota at 00:00 UTC on the 1st, through
// month ends, the leap day, century years and the year's end.
var calendarScenarios = []struct {
	name  string
	rule  limiter.Rule
	steps []struct {
		at   time.Time
		key  string
		cost int64
		m    float64
		want limiter.Decision
	}
}{
	{"day: resets at 00:00 UTC, into the leap day", calendarRule(3, limiter.Day), []struct {
		at   time.Time
		key  string
		cost int64
		m    float64
		want limiter.Decision
	}{
		{at: utc(2024, 2, 28, 23, 59, 59, 500_000), want: d(ok, 3, 2, 500*ms, 0)},                            // t0
		{at: utc(2024, 2, 28, 23, 59, 59, 600_000), cost: 2, want: d(ok, 3, 0, 400*ms, 0)},                   // t1
		{at: utc(2024, 2, 28, 23, 59, 59, 900_000), want: d(over, 3, 0, 100*ms, 100*ms)},                     // t2
		{at: utc(2024, 2, 29, 0, 0, 0, 0), want: d(ok, 3, 2, day, 0)},                                        // t3: the leap day
		{at: utc(2024, 2, 29, 18, 0, 0, 0), cost: 2, want: d(ok, 3, 0, 6*time.Hour, 0)},                      // t4
		{at: utc(2024, 2, 29, 23, 59, 59, 999_999), want: d(over, 3, 0, time.Microsecond, time.Microsecond)}, // t5
		{at: utc(2024, 3, 1, 0, 0, 0, 0), m: 0.5, want: d(ok, 3, 0, day, 0)},                                 // t6: floor(3×0.5) = 1
		{at: utc(2024, 3, 1, 1, 0, 0, 0), m: 0.5, want: d(shed, 3, 0, 23*time.Hour, 23*time.Hour)},           // t7
		{at: utc(2024, 3, 1, 2, 0, 0, 0), want: d(ok, 3, 0, 22*time.Hour, 0)},                                // t8: 2 admitted, the shed one spent quota
		{at: utc(2024, 3, 2, 0, 0, 0, 0), want: d(ok, 3, 2, day, 0)},                                         // t9
	}},
	{"month: resets on the 1st, 29 days in a leap February", calendarRule(2, limiter.Month), []struct {
		at   time.Time
		key  string
		cost int64
		m    float64
		want limiter.Decision
	}{
		{at: utc(2024, 1, 31, 23, 59, 59, 0), want: d(ok, 2, 1, time.Second, 0)},                   // t0
		{at: utc(2024, 1, 31, 23, 59, 59, 999_999), want: d(ok, 2, 0, time.Microsecond, 0)},        // t1
		{at: utc(2024, 2, 1, 0, 0, 0, 0), want: d(ok, 2, 1, 29*day, 0)},                            // t2
		{at: utc(2024, 2, 29, 12, 0, 0, 0), want: d(ok, 2, 0, 12*time.Hour, 0)},                    // t3: the leap day
		{at: utc(2024, 2, 29, 23, 59, 59, 0), want: d(over, 2, 0, time.Second, time.Second)},       // t4
		{at: utc(2024, 3, 1, 0, 0, 0, 0), cost: 2, want: d(ok, 2, 0, 31*day, 0)},                   // t5
		{at: utc(2024, 4, 30, 23, 0, 0, 0), want: d(ok, 2, 1, time.Hour, 0)},                       // t6: a 30-day month
		{at: utc(2024, 12, 31, 23, 0, 0, 0), cost: 2, want: d(ok, 2, 0, time.Hour, 0)},             // t7: the year's end
		{at: utc(2024, 12, 31, 23, 30, 0, 0), want: d(over, 2, 0, 30*time.Minute, 30*time.Minute)}, // t8
		{at: utc(2025, 1, 1, 0, 0, 0, 0), want: d(ok, 2, 1, 31*day, 0)},                            // t9
	}},
	{"month: February's length by the leap-year rules", calendarRule(5, limiter.Month), []struct {
		at   time.Time
		key  string
		cost int64
		m    float64
		want limiter.Decision
	}{
		{at: utc(2023, 2, 1, 0, 0, 0, 0), key: "2023", want: d(ok, 5, 4, 28*day, 0)},                  // t0
		{at: utc(2023, 2, 28, 0, 0, 0, 0), key: "2023", want: d(ok, 5, 3, day, 0)},                    // t1
		{at: utc(2023, 3, 1, 0, 0, 0, 0), key: "2023", want: d(ok, 5, 4, 31*day, 0)},                  // t2
		{at: utc(2000, 2, 1, 0, 0, 0, 0), key: "2000", want: d(ok, 5, 4, 29*day, 0)},                  // t3: divisible by 400
		{at: utc(2000, 2, 29, 23, 59, 0, 0), key: "2000", want: d(ok, 5, 3, time.Minute, 0)},          // t4
		{at: utc(2100, 2, 1, 0, 0, 0, 0), key: "2100", want: d(ok, 5, 4, 28*day, 0)},                  // t5: by 100, not 400
		{at: utc(2100, 2, 28, 23, 59, 59, 0), key: "2100", want: d(ok, 5, 3, time.Second, 0)},         // t6
		{at: utc(2100, 3, 1, 0, 0, 0, 0), key: "2100", want: d(ok, 5, 4, 31*day, 0)},                  // t7
		{at: utc(1970, 1, 1, 0, 0, 0, 1), key: "1970", want: d(ok, 5, 4, 31*day-time.Microsecond, 0)}, // t8
		{at: utc(2024, 11, 15, 12, 0, 0, 0), key: "nov", want: d(ok, 5, 4, 15*day+12*time.Hour, 0)},   // t9
	}},
	{"hour and minute: UTC hours and minutes", calendarRule(1, limiter.Hour), []struct {
		at   time.Time
		key  string
		cost int64
		m    float64
		want limiter.Decision
	}{
		{at: utc(2024, 2, 29, 23, 15, 0, 0), want: d(ok, 1, 0, 45*time.Minute, 0)},                                     // t0
		{at: utc(2024, 2, 29, 23, 59, 59, 0), want: d(over, 1, 0, time.Second, time.Second)},                           // t1
		{at: utc(2024, 3, 1, 0, 0, 0, 0), want: d(ok, 1, 0, time.Hour, 0)},                                             // t2
		{at: utc(2024, 3, 1, 0, 0, 0, 1), want: d(over, 1, 0, time.Hour-time.Microsecond, time.Hour-time.Microsecond)}, // t3
	}},
}

func TestCalendarWindows(t *testing.T) {
	forEachStore(t, func(t *testing.T, newStore storeFactory) {
		for _, sc := range calendarScenarios {
			t.Run(sc.name, func(t *testing.T) {
				clock := fakeclock.New(sc.steps[0].at)
				s := newStore(t, clock.Now)
				for i, st := range sc.steps {
					clock.Set(st.at)
					key := st.key
					if key == "" {
						key = "k"
					}
					req := limiter.Request{Key: key, Rule: sc.rule, Cost: st.cost, Multiplier: st.m}
					got, err := s.Decide(context.Background(), req)
					if err != nil {
						t.Fatalf("t%d (%v): %v", i, st.at, err)
					}
					if got != st.want {
						t.Errorf("t%d (%v cost %d m %v):\n got %+v\nwant %+v", i, st.at, st.cost, st.m, got, st.want)
					}
				}
			})
		}
		t.Run("minute", func(t *testing.T) {
			clock := fakeclock.New(utc(2024, 12, 31, 23, 59, 45, 0))
			s := newStore(t, clock.Now)
			got, err := s.Decide(context.Background(), limiter.Request{Key: "m", Rule: calendarRule(1, limiter.Minute)})
			if want := d(ok, 1, 0, 15*time.Second, 0); err != nil || got != want {
				t.Fatalf("%+v %v, want %+v", got, err, want)
			}
		})
	})
}

// TestCalendarWindowsOnStoreTime: without WithClock each store reads its own
// time (Redis: its server's TIME), and a day quota resets at the next 00:00
// UTC, a month quota on the next 1st, by that time.
func TestCalendarWindowsOnStoreTime(t *testing.T) {
	next := map[time.Duration]func(time.Time) time.Time{
		limiter.Day: func(n time.Time) time.Time { return n.Truncate(day).Add(day) },
		limiter.Month: func(n time.Time) time.Time {
			return time.Date(n.Year(), n.Month()+1, 1, 0, 0, 0, 0, time.UTC)
		},
	}
	forEachStore(t, func(t *testing.T, newStore storeFactory) {
		s := newStore(t, nil)
		for _, period := range []time.Duration{limiter.Day, limiter.Month} {
			before := time.Now().UTC()
			got, err := s.Decide(context.Background(), limiter.Request{Key: period.String(), Rule: calendarRule(10, period)})
			after := time.Now().UTC()
			if err != nil || !got.Allowed || got.Remaining != 9 {
				t.Fatalf("period %v: %+v %v", period, got, err)
			}
			// Redis's clock and this one are the same host's: a second covers
			// the call and rounding.
			lo, hi := next[period](after).Sub(after)-time.Second, next[period](before).Sub(before)+time.Second
			if next[period](before) != next[period](after) {
				continue // the window turned during the call
			}
			if got.ResetAfter < lo || got.ResetAfter > hi {
				t.Errorf("period %v: reset after %v, want %v..%v (the next window's start)", period, got.ResetAfter, lo, hi)
			}
		}
	})
}

// TestCalendarRuleValidation: only fixed windows of a calendar unit align
// to the calendar.
func TestCalendarRuleValidation(t *testing.T) {
	bad := []limiter.Rule{
		{Algorithm: limiter.TokenBucket, Limit: 1, Period: limiter.Day, Align: limiter.AlignCalendar},
		{Algorithm: limiter.SlidingWindowCounter, Limit: 1, Period: limiter.Day, Align: limiter.AlignCalendar},
		{Algorithm: limiter.FixedWindow, Limit: 1, Period: 2 * limiter.Day, Align: limiter.AlignCalendar},
		{Algorithm: limiter.FixedWindow, Limit: 1, Period: time.Second, Align: limiter.AlignCalendar},
		{Algorithm: limiter.FixedWindow, Limit: 1, Period: time.Second, Align: 7},
	}
	for _, r := range bad {
		if err := r.Validate(); err == nil {
			t.Errorf("%v %v align %v: valid, want an error", r.Algorithm, r.Period, r.Align)
		}
	}
	for _, p := range limiter.CalendarPeriods {
		if err := calendarRule(1, p).Validate(); err != nil {
			t.Errorf("period %v: %v", p, err)
		}
	}
}
