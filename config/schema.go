package config

import (
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

// Schema is the JSON Schema of the configuration file, generated from
// Config by its YAML tags, with the bounds validation applies
// (configLimits, policy.TierBounds, policy.RuleBounds), each published by
// policy.Bound.Schema.
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
		return map[string]any{"type": "string", "pattern": `^([0-9]+d|[0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))([0-9]+(\.[0-9]*)?(ns|us|µs|ms|s|m|h))*$|^0$`,
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
			b, ok := configLimits[p]
			if !ok && t == reflectConfig {
				b = policy.ConfigBounds()[p]
			}
			props[name] = b.Schema(schemaOf(t.Field(i).Type, p))
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
		props[name] = b.Schema(boundField(f.Type, bounds, prefix+name+"."))
	}
	s := map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

// boundField is the schema of a field of type t of policy.Tier or
// policy.Rule, whose own fields (an object's; a list of objects', of each)
// have their bounds in bounds at prefix.
func boundField(t reflect.Type, bounds map[string]policy.Bound, prefix string) map[string]any {
	switch {
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct: // an optional object
		return boundObject(t.Elem(), bounds, prefix)
	case t.Kind() == reflect.Struct && t != durationType:
		return boundObject(t, bounds, prefix)
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return map[string]any{"type": "array", "items": boundObject(t.Elem(), bounds, prefix)}
	}
	return schemaOf(t, "")
}
