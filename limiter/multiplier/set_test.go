package multiplier_test

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter/multiplier"
)

func TestSetValidate(t *testing.T) {
	at := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name string
		s    multiplier.Set
		want []string // substrings of the error; none: valid
	}{
		{"valid", multiplier.Set{Tiers: map[string]float64{"free": 0.5}, Rates: map[string]float64{"free": 10}, At: at}, nil},
		{"zero at", multiplier.Set{Tiers: map[string]float64{"free": 1}}, []string{"at is zero"}},
		{"epoch", multiplier.Set{Epoch: multiplier.MaxEpoch + 1, At: at}, []string{"exceeds 2^53"}},
		{"multipliers", multiplier.Set{Tiers: map[string]float64{"a": 0, "b": 2, "c": math.NaN(), "_x": 1}, At: at},
			[]string{`"_x" must not`, `tier "a": multiplier 0`, `tier "b": multiplier 2`, `tier "c": multiplier NaN`}},
		{"rates", multiplier.Set{Rates: map[string]float64{"a": 0, "b": math.Inf(1), "": 1}, At: at},
			[]string{`rate tier name ""`, `tier "a": rate 0`, `tier "b": rate +Inf`}},
		{"instances", multiplier.Set{Instances: map[string]map[string]float64{"i1": {"free": 0.25}, "i2": {"free": 1}}, At: at}, nil},
		{"instances invalid", multiplier.Set{Instances: map[string]map[string]float64{"": {"free": 0.5},
			"i1": {"free": 0, "a@b": 0.5, "_x": 1}}, At: at},
			[]string{"instance id must not be empty", `instance "i1": tier "free": multiplier 0`, `instance "i1": tier name "a@b"`,
				`instance "i1": tier name "_x"`}},
	} {
		err := tc.s.Validate(1)
		if len(tc.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v, want valid", tc.name, err)
			}
			continue
		}
		if !errors.Is(err, multiplier.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want it to name %s", tc.name, err, w)
			}
		}
	}
}
