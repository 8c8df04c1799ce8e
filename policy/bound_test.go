package policy

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter/multiplier"
)

// TestBoundCheck: Check accepts what the bound holds and refuses the rest
// with Want, whatever the field's type.
func TestBoundCheck(t *testing.T) {
	open := Bound{Min: 0, Max: 1, Range: true, ExclusiveMin: true, ExclusiveMax: true, Msg: "want a ratio in (0, 1)"}
	one := 1
	for _, tc := range []struct {
		b    Bound
		v    any
		want string
	}{
		{Between(1, 10), 0, "want 1..10"},
		{Between(1, 10), int64(10), ""},
		{Between(1, 10), 11.5, "want 1..10"},
		{AtLeast(0), -1, "must not be negative"},
		{AtLeast(0), math.Inf(1), ""},
		{AtLeast(0), math.NaN(), "must not be negative"},
		{open, 0.0, "want a ratio in (0, 1)"},
		{open, 1.0, "want a ratio in (0, 1)"},
		{open, 0.5, ""},
		{Between(0, 128), &one, ""},
		{Between(2, 128), &one, "want 2..128"},
		{Between(2, 128), (*int)(nil), ""},
		{Durations(time.Millisecond, time.Hour), Duration(0), "want 1ms..1h"},
		{Durations(time.Millisecond, time.Hour), time.Hour + 1, "want 1ms..1h"},
		{Durations(0, 10*time.Second), Duration(10 * time.Second), ""},
		{Durations(0, 10*time.Second), Duration(11 * time.Second), "want at most 10s"},
		{Bound{Enum: []string{"a", "b", "c"}}, "d", "want a, b or c"},
		{Bound{Enum: []string{"a", "b", "c"}}, "", ""},
		{Bound{Enum: []string{"a", "b", "c"}, Required: true}, "", "want a, b or c"},
	} {
		if got := tc.b.Check(reflect.ValueOf(tc.v)); got != tc.want {
			t.Errorf("%+v.Check(%v) = %q, want %q", tc.b, tc.v, got, tc.want)
		}
	}
}

// TestBoundSchema: what Schema publishes of each kind of bound.
func TestBoundSchema(t *testing.T) {
	str := func() map[string]any { return map[string]any{"type": "string"} }
	list := func() map[string]any { return map[string]any{"type": "array", "items": str()} }
	for _, tc := range []struct {
		b    Bound
		s    map[string]any
		want string
	}{
		{Between(1, 10), map[string]any{}, `{"maximum":10,"minimum":1}`},
		{AtLeast(0), map[string]any{}, `{"minimum":0}`},
		{MultiplierBound(), map[string]any{}, `{"exclusiveMinimum":0,"maximum":1}`},
		{unit(multiplier.Range{Max: 1, Open: true}), map[string]any{}, `{"exclusiveMaximum":1,"minimum":0}`},
		{Durations(0, time.Minute), map[string]any{"description": "Go duration"}, `{"description":"Go duration; 0s..1m"}`},
		{Bound{Enum: []string{"a", "b"}}, str(), `{"enum":["a","b"],"type":"string"}`},
		{Bound{Pattern: "^x$", MaxLen: 9}, str(), `{"maxLength":9,"pattern":"^x$","type":"string"}`},
		{Bound{Pattern: "^x$", MinItems: 1, MaxItems: 8}, list(), `{"items":{"pattern":"^x$","type":"string"},"maxItems":8,"minItems":1,"type":"array"}`},
		{Bound{Pattern: "^x$", MaxItems: 8}, map[string]any{"oneOf": []any{str(), list()}},
			`{"oneOf":[{"pattern":"^x$","type":"string"},{"items":{"pattern":"^x$","type":"string"},"maxItems":8,"type":"array"}]}`},
	} {
		got, err := json.Marshal(tc.b.Schema(tc.s))
		if err != nil || string(got) != tc.want {
			t.Errorf("%+v: %s %v, want %s", tc.b, got, err, tc.want)
		}
	}
}
