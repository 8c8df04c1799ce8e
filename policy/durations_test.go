package policy

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// Durations are written one way, the shortest Go form: "1m", not "1m0s".
func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", time.Second: "1s", time.Minute: "1m", 90 * time.Minute: "1h30m", 24 * time.Hour: "24h",
		250 * time.Millisecond: "250ms", 1500 * time.Millisecond: "1.5s", 8784 * time.Hour: "8784h",
		time.Hour + time.Second: "1h0m1s", 10 * time.Minute: "10m",
	} {
		if got := limiter.FormatDuration(d); got != want {
			t.Errorf("limiter.FormatDuration(%v) = %q, want %q", d, got, want)
		}
		b, _ := Duration(d).MarshalText()
		if string(b) != want {
			t.Errorf("Duration(%v).MarshalText() = %q, want %q", d, b, want)
		}
		var back Duration
		if err := back.UnmarshalText(b); err != nil || back.D() != d {
			t.Errorf("%q reads back as %v, %v", b, back, err)
		}
	}
}

// A missing period says "required", and bounds are written as people
// write them: 366d, not 8784h0m0s.
func TestDurationBoundMessages(t *testing.T) {
	for _, c := range []struct {
		period Duration
		want   string
	}{
		{0, "tiers.free.period: required: want 1ms..366d"},
		{Duration(9000 * time.Hour), "tiers.free.period: 9000h: want 1ms..366d"},
		{Duration(time.Microsecond), "tiers.free.period: 1µs: want 1ms..366d"},
	} {
		cfg := testConfig()
		tier := cfg.Tiers["free"]
		tier.Period = c.period
		cfg.Tiers["free"] = tier
		var fe *FieldError
		if err := ValidateConfig(cfg); !errors.As(err, &fe) || fe.Field+": "+fe.Msg != c.want {
			t.Errorf("period %v: %v, want %q", c.period, err, c.want)
		}
	}
}

// Every duration bound in an error is written so: max_wait, lease.ttl.
func TestDurationBoundsInRuleMessages(t *testing.T) {
	for _, c := range []struct {
		edit func(*Rule)
		want string
	}{
		{func(r *Rule) { r.Mode, r.MaxWait = "delay", Duration(time.Hour) }, "1h: delay mode needs 0 < max_wait <= "},
		{func(r *Rule) { r.Lease = &Lease{Size: 1, TTL: Duration(time.Hour)} }, "1h: want 0 (1s).."},
	} {
		cfg := testConfig()
		c.edit(&cfg.Rules[0])
		err := ValidateConfig(cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "0m0s") || strings.Contains(err.Error(), "m0s") {
			t.Errorf("%v, want %q with the bound written short", err, c.want)
		}
	}
}

// TestDurationDays: bounds are written in days ("366d"), so a duration
// reads them too, whole days first; anything else about days is an error.
func TestDurationDays(t *testing.T) {
	for in, want := range map[string]time.Duration{"366d": 366 * 24 * time.Hour, "1d12h": 36 * time.Hour,
		"30d": 30 * 24 * time.Hour, "2d30m": 48*time.Hour + 30*time.Minute} {
		var d Duration
		if err := d.UnmarshalText([]byte(in)); err != nil || d.D() != want {
			t.Errorf("%q: %v, %v; want %v", in, d.D(), err, want)
		}
	}
	for _, in := range []string{"d", "1.5d", "-1d", "1d-1h", "1h1d", "1dd", "99999d"} {
		var d Duration
		if err := d.UnmarshalText([]byte(in)); err == nil {
			t.Errorf("%q: %v, want an error", in, d.D())
		}
	}
}
