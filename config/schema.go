package config

import (
	"math"
	"reflect"

	"github.com/throttledhq/throttled/policy"
)

// schemaDraft is the JSON Schema dialect `throttled config schema` writes.
const schemaDraft = "https://json-schema.org/draft/2020-12/schema"

var (
	reflectConfig = reflect.TypeOf(Config{})
	tierType      = reflect.TypeOf(policy.Tier{})
	ruleType      = reflect.TypeOf(policy.Rule{})
)

// configSchema is the JSON Schema of the configuration file, generated from
// Config by its YAML tags, with the limits validation applies
// (configLimits, policy.TierBounds, policy.RuleBounds).
func Schema() map[string]any {
	s := schemaOf(reflectConfig, "")
	s["$schema"] = schemaDraft
	s["title"] = "throttled configuration (throttled serve --config FILE)"
	return s
}

// schemaOf is the schema of a value of type t at the YAML path pattern
// ("*" for a map key, "[]" for a list item).
func schemaOf(t reflect.Type, pattern string) map[string]any {
	switch t {
	case durationType:
		return map[string]any{"type": "string", "pattern": `^([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))+$|^0$`,
			"description": `Go duration such as "1s" or "250ms"`}
	case keySourcesType:
		list := map[string]any{"type": "array", "items": map[string]any{"type": "string"}}
		return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, list}}
	case tierType:
		return boundObject(t, policy.TierBounds(), "")
	case ruleType:
		return boundObject(t, policy.RuleBounds(), "")
	}
	switch t.Kind() {
	case reflect.Pointer:
		return schemaOf(t.Elem(), pattern)
	case reflect.Struct:
		props := map[string]any{}
		for i := 0; i < t.NumField(); i++ {
			name := yamlName(t.Field(i))
			p := joinPath(pattern, name)
			props[name] = withLimit(schemaOf(t.Field(i).Type, p), configLimits[p])
		}
		return map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	case reflect.Map:
		s := map[string]any{"type": "object", "additionalProperties": schemaOf(t.Elem(), joinPath(pattern, "*"))}
		if t.Elem() == tierType {
			s["propertyNames"] = map[string]any{"pattern": policy.TierBounds()["name"].Pattern}
		}
		return s
	case reflect.Slice:
		return map[string]any{"type": "array", "items": schemaOf(t.Elem(), pattern+"[]")}
	}
	return map[string]any{"type": jsonType(t)}
}

func jsonType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "boolean"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	}
	return "integer"
}

// withLimit adds l to s.
func withLimit(s map[string]any, l limit) map[string]any {
	if len(l.enum) > 0 {
		s["enum"] = l.enum
	}
	if l.maxDur > 0 {
		s["description"] = s["description"].(string) + "; " + shortDur(l.minDur) + ".." + shortDur(l.maxDur)
	}
	lo, hi := "minimum", "maximum"
	if l.exclusive {
		lo, hi = "exclusiveMinimum", "exclusiveMaximum"
	}
	if l.max != 0 || l.min != 0 { // a numeric limit
		if !math.IsInf(l.min, 0) {
			s[lo] = l.min
		}
		if !math.IsInf(l.max, 0) {
			s[hi] = l.max
		}
	}
	return s
}

// boundObject is the schema of policy.Tier or policy.Rule with the limits the
// admin API validates.
func boundObject(t reflect.Type, bounds map[string]policy.Bound, prefix string) map[string]any {
	props := map[string]any{}
	var required []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name := yamlName(f)
		b := bounds[prefix+name]
		if b.Required {
			required = append(required, name)
		}
		if ft := f.Type; ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct { // an optional object
			props[name] = boundObject(ft.Elem(), bounds, prefix+name+".")
			continue
		}
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			props[name] = boundObject(f.Type, bounds, prefix+name+".")
			continue
		}
		props[name] = withBound(schemaOf(f.Type, ""), b)
	}
	s := map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// withBound adds b to s.
func withBound(s map[string]any, b policy.Bound) map[string]any {
	if oneOf, ok := s["oneOf"].([]any); ok { // a string or a list of them
		withBound(oneOf[0].(map[string]any), policy.Bound{Pattern: b.Pattern})
		withBound(oneOf[1].(map[string]any), b)
		return s
	}
	if b.Range {
		s["minimum"] = b.Min
		s[map[bool]string{false: "maximum", true: "exclusiveMaximum"}[b.ExclusiveMax]] = b.Max
	}
	if len(b.Enum) > 0 {
		s["enum"] = b.Enum
	}
	if b.MaxDur > 0 {
		s["description"] = s["description"].(string) + "; " + b.DurationRange()
	}
	if b.MaxLen > 0 {
		s["maxLength"] = b.MaxLen
	}
	if b.MinItems > 0 {
		s["minItems"] = b.MinItems
	}
	if b.MaxItems > 0 {
		s["maxItems"] = b.MaxItems
	}
	if items, ok := s["items"].(map[string]any); ok && b.Pattern != "" {
		items["pattern"] = b.Pattern
	} else if b.Pattern != "" {
		s["pattern"] = b.Pattern
	}
	return s
}
