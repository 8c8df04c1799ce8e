package policy

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// Bound is the rule validation applies to one field: of a Tier or a Rule
// (TierBounds, RuleBounds), of a pin (MultiplierBound) or of the
// configuration file (config's table of them). Validation reads it and the
// schemas publish it (Schema: `throttled config schema`; a test holds
// admin/openapi.json to it), so that a limit is written once. Zero fields
// mean no constraint.
type Bound struct {
	// Min and Max bound a number when Range is set: inclusively, unless
	// ExclusiveMin or ExclusiveMax; an infinite one bounds nothing.
	Min, Max                   float64
	Range                      bool
	ExclusiveMin, ExclusiveMax bool
	// MinDur and MaxDur bound a duration (0 MaxDur: none).
	MinDur, MaxDur time.Duration
	// Enum lists the values of a string; "" is accepted, as the default,
	// unless Required.
	Enum []string
	// Pattern is a regular expression for a string, or for each item of a list.
	Pattern string
	// MaxLen bounds the bytes of a string; MinItems and MaxItems a list.
	MaxLen             int
	MinItems, MaxItems int
	// Required fields must be present (and, for numbers and enumerations,
	// set).
	Required bool
	// Msg is the error of a value out of bounds; "" says the bounds (Want).
	Msg string
}

// Between bounds a number to lo..hi, inclusively.
func Between(lo, hi float64) Bound { return Bound{Min: lo, Max: hi, Range: true} }

// AtLeast bounds a number to lo or more.
func AtLeast(lo float64) Bound { return Between(lo, math.Inf(1)) }

// Durations bounds a duration to lo..hi.
func Durations(lo, hi time.Duration) Bound { return Bound{MinDur: lo, MaxDur: hi} }

// Want says what b accepts, as the error of a value out of bounds: Msg, or
// "want a, b or c", "want at most 10s", "want 1ms..1h", "must not be
// negative" or "want 1..1000".
func (b Bound) Want() string {
	switch {
	case b.Msg != "":
		return b.Msg
	case len(b.Enum) > 0:
		return "want " + quoteList(b.Enum)
	case b.MaxDur > 0 && b.MinDur == 0:
		return "want at most " + boundDur(b.MaxDur)
	case b.MaxDur > 0:
		return "want " + b.DurationRange()
	case b.Min == 0 && math.IsInf(b.Max, 1):
		return "must not be negative"
	}
	return "want " + strconv.FormatFloat(b.Min, 'f', -1, 64) + ".." + strconv.FormatFloat(b.Max, 'f', -1, 64)
}

// DurationRange writes b's durations as "1ms..1h" or "1ms..366d", as Want
// and the schemas state them.
func (b Bound) DurationRange() string { return boundDur(b.MinDur) + ".." + boundDur(b.MaxDur) }

// boundDur writes a bound as people write it: a whole number of days
// beyond one in days ("366d", not "8784h"), else as FormatDuration.
func boundDur(d time.Duration) string {
	const day = 24 * time.Hour
	if d > day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return limiter.FormatDuration(d)
}

// number reports whether x is within b's range (NaN never is).
func (b Bound) number(x float64) bool {
	if math.IsNaN(x) {
		return false
	}
	if !b.Range {
		return true
	}
	lo := x > b.Min || !b.ExclusiveMin && x == b.Min
	hi := x < b.Max || !b.ExclusiveMax && x == b.Max
	return lo && hi
}

// duration reports whether d is within b's durations.
func (b Bound) duration(d time.Duration) bool {
	return d >= b.MinDur && (b.MaxDur == 0 || d <= b.MaxDur)
}

// enum reports whether s is one of b.Enum, or "" (the default) unless b is
// Required.
func (b Bound) enum(s string) bool {
	if s == "" {
		return !b.Required
	}
	return len(b.Enum) == 0 || slices.Contains(b.Enum, s)
}

var (
	durationType     = reflect.TypeOf(Duration(0))
	timeDurationType = reflect.TypeOf(time.Duration(0))
)

// Check returns what is wrong with v, a value of the field b bounds (a nil
// pointer: nothing), as Want says it, or "". It applies the range, the
// durations and the enumeration; patterns, lengths and item counts are
// checked by the validators of the fields that have them, in words of
// their own.
func (b Bound) Check(v reflect.Value) string {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return ""
		}
		v = v.Elem()
	}
	ok := true
	switch {
	case v.Type() == durationType || v.Type() == timeDurationType:
		ok = b.duration(time.Duration(v.Int()))
	case v.Kind() == reflect.String:
		ok = b.enum(v.String())
	case v.CanInt():
		ok = b.number(float64(v.Int()))
	case v.CanFloat():
		ok = b.number(v.Float())
	}
	if ok {
		return ""
	}
	return b.Want()
}

// checkNum refuses v outside b's range: "v: " and what b wants.
func checkNum[T int64 | float64](b Bound, field string, v T) error {
	if !b.number(float64(v)) {
		return fieldErr(field, "%v: %s", v, b.Want())
	}
	return nil
}

// checkDur refuses d outside b's durations ("9000h: want 1ms..366d"), a
// missing one when b is Required ("required: want 1ms..366d").
func (b Bound) checkDur(field string, d Duration) error {
	switch {
	case d == 0 && b.Required:
		return fieldErr(field, "required: %s", b.Want())
	case !b.duration(d.D()):
		return fieldErr(field, "%s: %s", limiter.FormatDuration(d.D()), b.Want())
	}
	return nil
}

// checkEnum accepts one of b.Enum, or "" (the default) unless b is Required.
func (b Bound) checkEnum(field, v string) error {
	if !b.enum(v) {
		return fieldErr(field, "%q: %s", v, b.Want())
	}
	return nil
}

// Schema adds b to s, the JSON Schema (draft 2020-12) of the type of the
// field b bounds, and returns s: the range as minimum and maximum (or
// exclusiveMinimum and exclusiveMaximum; an infinite end not at all), enum,
// maxLength, minItems, maxItems, the pattern (of each item of a list; of
// both sides of a string-or-list oneOf) and, as JSON Schema cannot bound a
// duration written as a string, the durations at the end of the
// description.
func (b Bound) Schema(s map[string]any) map[string]any {
	if oneOf, ok := s["oneOf"].([]any); ok && len(oneOf) == 2 { // a string or a list of them
		Bound{Pattern: b.Pattern}.Schema(oneOf[0].(map[string]any))
		b.Schema(oneOf[1].(map[string]any))
		return s
	}
	if b.Range {
		lo, hi := map[bool]string{false: "minimum", true: "exclusiveMinimum"}[b.ExclusiveMin],
			map[bool]string{false: "maximum", true: "exclusiveMaximum"}[b.ExclusiveMax]
		setIf(s, lo, b.Min, !math.IsInf(b.Min, 0))
		setIf(s, hi, b.Max, !math.IsInf(b.Max, 0))
	}
	setIf(s, "enum", slices.Clone(b.Enum), len(b.Enum) > 0)
	setIf(s, "maxLength", b.MaxLen, b.MaxLen > 0)
	setIf(s, "minItems", b.MinItems, b.MinItems > 0)
	setIf(s, "maxItems", b.MaxItems, b.MaxItems > 0)
	if b.MaxDur > 0 {
		d, _ := s["description"].(string)
		s["description"] = strings.TrimPrefix(d+"; ", "; ") + b.DurationRange()
	}
	if items, ok := s["items"].(map[string]any); ok {
		setIf(items, "pattern", b.Pattern, b.Pattern != "")
	} else {
		setIf(s, "pattern", b.Pattern, b.Pattern != "")
	}
	return s
}

func setIf(s map[string]any, key string, v any, ok bool) {
	if ok {
		s[key] = v
	}
}
