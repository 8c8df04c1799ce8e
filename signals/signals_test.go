package signals

import (
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a fake clock for tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// at is t0 plus n seconds: the instants t0..t9 of the table tests.
func at(n int) time.Time { return t0.Add(time.Duration(n) * time.Second) }

func TestKindString(t *testing.T) {
	want := []string{"latency", "error_ratio", "saturation"}
	for i, k := range Kinds() {
		if k.String() != want[i] {
			t.Errorf("Kind(%d) = %q, want %q", k, k.String(), want[i])
		}
	}
	if got := Kind(9).String(); got != "kind(9)" {
		t.Errorf("unknown kind = %q", got)
	}
}

func TestReasonString(t *testing.T) {
	seen := map[string]bool{}
	for r := OK; r <= NoTraffic; r++ {
		s := r.String()
		if s == "" || seen[s] || strings.HasPrefix(s, "reason(") {
			t.Errorf("Reason(%d) = %q: empty, repeated or unnamed", r, s)
		}
		seen[s] = true
	}
	if OK.String() != "ok" || Stale.String() != "stale" || Reason(99).String() != "reason(99)" {
		t.Errorf("got %q %q %q", OK, Stale, Reason(99))
	}
}

func TestFinite(t *testing.T) {
	for _, tc := range []struct {
		in     float64
		valid  bool
		reason Reason
	}{
		{0, true, OK},
		{0.25, true, OK},
		{-1, true, OK},
		{math.NaN(), false, NaN},
		{math.Inf(+1), false, Inf},
		{math.Inf(-1), false, Inf},
	} {
		v := finite(tc.in, t0)
		if v.Valid != tc.valid || v.Reason != tc.reason || !v.At.Equal(t0) {
			t.Errorf("finite(%v) = %+v, want valid=%v reason=%s", tc.in, v, tc.valid, tc.reason)
		}
		if !v.Valid && !math.IsNaN(v.V) {
			t.Errorf("finite(%v): invalid value carries %v, want NaN", tc.in, v.V)
		}
	}
}

func TestValueString(t *testing.T) {
	for _, tc := range []struct {
		v    Value
		want string
	}{
		{valid(0.25, t0), "0.25"},
		{invalid(NoTraffic, t0, nil), "invalid (no_traffic)"},
		{invalid(QueryError, t0, errors.New("boom")), "invalid (query_error: boom)"},
	} {
		if got := tc.v.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}

func TestSignalsGet(t *testing.T) {
	s := Signals{Latency: valid(1, t0), ErrorRatio: valid(2, t0), Saturation: valid(3, t0)}
	for i, k := range Kinds() {
		if got := s.Get(k).V; got != float64(i+1) {
			t.Errorf("Get(%s) = %v, want %d", k, got, i+1)
		}
	}
	if v := s.Get(Kind(7)); v.Valid || v.Reason != Disabled {
		t.Errorf("Get(unknown) = %+v, want invalid Disabled", v)
	}
	var u Signals
	for _, k := range Kinds() {
		u.set(k, s.Get(k))
	}
	if u.Latency != s.Latency || u.ErrorRatio != s.ErrorRatio || u.Saturation != s.Saturation {
		t.Errorf("set/Get round trip: %+v != %+v", u, s)
	}
}
