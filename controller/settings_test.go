package controller

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter/multiplier"
)

func TestSettingsDefaults(t *testing.T) {
	law := mustLaw(t, Settings{Tiers: []Tier{{Name: "free"}, {Name: "tiny", Ceiling: 0.01}}})
	got := law.Settings()
	want := Settings{
		Headroom: DefaultHeadroom, Cooldown: 9 * time.Second, HoldTimeout: DefaultHoldTimeout,
		SignalStaleAfter: 15 * time.Second, Period: DefaultPeriod, Jitter: DefaultJitter,
	}
	if got.Headroom != want.Headroom || got.Cooldown != want.Cooldown || got.HoldTimeout != want.HoldTimeout ||
		got.SignalStaleAfter != want.SignalStaleAfter || got.Period != want.Period || got.Jitter != want.Jitter {
		t.Fatalf("defaults: got %+v, want %+v", got, want)
	}
	free := Tier{Name: "free", Alpha: multiplier.DefaultAlpha, Beta: multiplier.DefaultBeta, Growth: multiplier.DefaultGrowth, Floor: multiplier.DefaultFloor, Ceiling: multiplier.DefaultCeiling}
	tiny := Tier{Name: "tiny", Alpha: multiplier.DefaultAlpha, Beta: multiplier.DefaultBeta, Growth: multiplier.DefaultGrowth, Floor: 0.01, Ceiling: 0.01}
	if got.Tiers[0] != free || got.Tiers[1] != tiny {
		t.Fatalf("tier defaults: got %+v, want %+v and %+v", got.Tiers, free, tiny)
	}
	got.Tiers[0].Name = "changed"
	if law.Settings().Tiers[0].Name != "free" {
		t.Fatal("Settings returned the law's own slice")
	}
}

func TestSettingsValidate(t *testing.T) {
	ok := Tier{Name: "free"}
	nan := math.NaN()
	cases := []struct {
		name string
		s    Settings
		want string // substring of the error, naming the field
	}{
		{"no tiers", Settings{}, "tiers = []: at least one tier is required"},
		{"negative period", Settings{Tiers: []Tier{ok}, Period: -time.Second}, "period = -1s"},
		{"NaN jitter", Settings{Tiers: []Tier{ok}, Jitter: nan}, "jitter = NaN"},
		{"jitter too big", Settings{Tiers: []Tier{ok}, Jitter: 0.6}, "jitter = 0.6: must be in (0, 0.5]"},
		{"negative headroom", Settings{Tiers: []Tier{ok}, Headroom: -0.1}, "headroom = -0.1"},
		{"headroom 1", Settings{Tiers: []Tier{ok}, Headroom: 1}, "headroom = 1: must be in (0, 1)"},
		{"negative cooldown", Settings{Tiers: []Tier{ok}, Cooldown: -1}, "cooldown = -1ns: must not be negative"},
		{"negative hold", Settings{Tiers: []Tier{ok}, HoldTimeout: -time.Minute}, "hold_timeout = -1m0s"},
		{"negative stale", Settings{Tiers: []Tier{ok}, SignalStaleAfter: -time.Second}, "signal_stale_after = -1s"},
		{"empty name", Settings{Tiers: []Tier{{}}}, `tiers[0].name = "": must not be empty`},
		{"duplicate", Settings{Tiers: []Tier{ok, ok}}, "tiers[1].name = free: duplicates tiers[0]"},
		{"negative priority", Settings{Tiers: []Tier{{Name: "a", Priority: -1}}}, "tiers[0].priority = -1"},
		{"NaN alpha", Settings{Tiers: []Tier{{Name: "a", Alpha: nan}}}, "tiers[0].alpha = NaN"},
		{"alpha > 1", Settings{Tiers: []Tier{{Name: "a", Alpha: 2}}}, "tiers[0].alpha = 2: must be in (0, 1]"},
		{"beta 1", Settings{Tiers: []Tier{{Name: "a", Beta: 1}}}, "tiers[0].beta = 1: must be in (0, 1)"},
		{"negative beta", Settings{Tiers: []Tier{{Name: "a", Beta: -0.5}}}, "tiers[0].beta = -0.5"},
		{"growth < 1", Settings{Tiers: []Tier{{Name: "a", Growth: 0.5}}}, "tiers[0].growth = 0.5: must be at least 1 and finite"},
		{"negative growth", Settings{Tiers: []Tier{{Name: "a", Growth: -2}}}, "tiers[0].growth = -2"},
		{"Inf growth", Settings{Tiers: []Tier{{Name: "a", Growth: math.Inf(1)}}}, "tiers[0].growth = +Inf"},
		{"NaN growth", Settings{Tiers: []Tier{{Name: "a", Growth: nan}}}, "tiers[0].growth = NaN"},
		{"ceiling > 1", Settings{Tiers: []Tier{{Name: "a", Ceiling: 1.5}}}, "tiers[0].ceiling = 1.5: must be in (0, 1]"},
		{"Inf ceiling", Settings{Tiers: []Tier{{Name: "a", Ceiling: math.Inf(1)}}}, "tiers[0].ceiling = +Inf"},
		{"floor > ceiling", Settings{Tiers: []Tier{{Name: "a", Floor: 0.8, Ceiling: 0.5}}}, "tiers[0].floor = 0.8: must be in (0, ceiling 0.5]"},
		{"negative floor", Settings{Tiers: []Tier{{Name: "a", Floor: -0.1}}}, "tiers[0].floor = -0.1"},
		{"NaN floor", Settings{Tiers: []Tier{ok, {Name: "b", Floor: nan}}}, "tiers[1].floor = NaN"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.Validate()
			if !errors.Is(err, ErrInvalidSettings) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate() = %v; want ErrInvalidSettings naming %q", err, c.want)
			}
			if !strings.HasPrefix(err.Error(), "controller: ") {
				t.Fatalf("error not prefixed with the package name: %v", err)
			}
			if _, err := NewLaw(c.s); !errors.Is(err, ErrInvalidSettings) {
				t.Fatalf("NewLaw accepted what Validate refused: %v", err)
			}
		})
	}
}

func TestSettingsValidateReportsEveryField(t *testing.T) {
	err := Settings{Headroom: -1, Tiers: []Tier{{Name: "a", Beta: 2, Alpha: -1}}}.Validate()
	for _, field := range []string{"headroom", "tiers[0].beta", "tiers[0].alpha"} {
		if err == nil || !strings.Contains(err.Error(), field+" = ") {
			t.Errorf("error %v does not name %s", err, field)
		}
	}
	if err := (Settings{Tiers: []Tier{{Name: "pinned", Floor: 0.5, Ceiling: 0.5}}}).Validate(); err != nil {
		t.Errorf("floor == ceiling (a pinned tier) refused: %v", err)
	}
	if err := (Settings{Tiers: []Tier{{Name: "additive", Growth: 1}}}).Validate(); err != nil {
		t.Errorf("growth 1 (additive increase only) refused: %v", err)
	}
}

func TestEnumStrings(t *testing.T) {
	got := []string{ActionHold.String(), ActionDecrease.String(), ActionIncrease.String(), ActionRecover.String(),
		Action(9).String(), ConditionNoSignal.String(), ConditionOverloaded.String(), ConditionBand.String(),
		ConditionHealthy.String(), Condition(-1).String()}
	want := "hold decrease increase recover Action(9) no_signal overloaded band healthy Condition(-1)"
	if strings.Join(got, " ") != want {
		t.Fatalf("got %q, want %q", strings.Join(got, " "), want)
	}
}
