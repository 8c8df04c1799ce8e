package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/policy"
)

// schemaAt follows a path of property names through a schema ("*" for a
// map's values, "[]" for a list's items).
func schemaAt(t *testing.T, s map[string]any, path ...string) map[string]any {
	t.Helper()
	for _, p := range path {
		var next any
		switch p {
		case "*":
			next = s["additionalProperties"]
		case "[]":
			next = s["items"]
		default:
			props, _ := s["properties"].(map[string]any)
			next = props[p]
		}
		m, ok := next.(map[string]any)
		if !ok {
			t.Fatalf("schema has no %s (in %v)", strings.Join(path, "."), s)
		}
		s = m
	}
	return s
}

// TestSchemaPrinted: the schema (`throttled config schema` prints it) is a draft 2020-12
// JSON Schema of the file, with the limits of tiers and rules that the
// admin API validates.
func TestSchemaPrinted(t *testing.T) {
	var out bytes.Buffer
	if err := json.NewEncoder(&out).Encode(Schema()); err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" || s["additionalProperties"] != false {
		t.Fatalf("$schema %v, additionalProperties %v", s["$schema"], s["additionalProperties"])
	}
	rate := schemaAt(t, s, "tiers", "*", "rate")
	beta := schemaAt(t, s, "tiers", "*", "beta")
	key := schemaAt(t, s, "rules", "[]", "key")
	period := schemaAt(t, s, "controller", "period")
	limit := schemaAt(t, s, "rules", "[]", "limits", "[]", "limit")
	if rate["type"] != "integer" || rate["minimum"] != 1.0 || rate["maximum"] != float64(limiter.MaxLimit) ||
		beta["exclusiveMaximum"] != 1.0 || key["oneOf"] == nil ||
		!strings.Contains(period["description"].(string), "100ms..1h") || limit["minimum"] != 1.0 ||
		schemaAt(t, s, "controller", "error_ratio_target")["exclusiveMinimum"] != 0.0 ||
		!reflect.DeepEqual(schemaAt(t, s, "log", "level")["enum"], []any{"debug", "info", "warn", "error"}) {
		t.Fatalf("rate %v, beta %v, key %v, controller.period %v, limits[].limit %v", rate, beta, key, period, limit)
	}
	if req := schemaAt(t, s, "rules", "[]")["required"]; !reflect.DeepEqual(req, []any{"name", "match", "key"}) {
		t.Fatalf("rules required %v", req)
	}
}

// TestSchemaCoversEveryField: every YAML key of Config is in the schema,
// and nothing else.
func TestSchemaCoversEveryField(t *testing.T) {
	var walk func(reflect.Type, map[string]any, string)
	walk = func(typ reflect.Type, s map[string]any, path string) {
		props, _ := s["properties"].(map[string]any)
		if len(props) != typ.NumField() {
			t.Errorf("%s: %d properties, %d fields", path, len(props), typ.NumField())
		}
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			sub, ok := props[yamlName(f)].(map[string]any)
			if !ok {
				t.Errorf("%s: no property %s", path, yamlName(f))
				continue
			}
			if f.Type.Kind() == reflect.Struct && f.Type != durationType {
				walk(f.Type, sub, joinPath(path, yamlName(f)))
			}
		}
	}
	walk(reflectConfig, Schema(), "")
}

// TestSchemaLimitsAreValidation: every bound of configLimits on a plain
// field is in the schema, and validation refuses a value just outside it,
// at its path, in the words the bound says: the schema and config check
// read one table.
func TestSchemaLimitsAreValidation(t *testing.T) {
	s := Schema()
	for pattern, b := range configLimits {
		if strings.Contains(pattern, "*") {
			continue
		}
		prop := schemaAt(t, s, strings.Split(pattern, ".")...)
		bad, inSchema := outsideValue(b, prop)
		if !inSchema {
			t.Errorf("%s: bound %+v not in the schema %v", pattern, b, prop)
		}
		src, env := testenv.ReadmeConfig, []string{"THROTTLED_" + strings.ToUpper(strings.ReplaceAll(pattern, ".", "_")) + "=" + bad}
		if !strings.Contains(pattern, ".") { // a top-level field, maybe not one the environment sets
			src, env = src+pattern+": "+bad+"\n", nil
		}
		_, err := Parse([]byte(src), env)
		if msg, ok := limitMessages[pattern]; ok && b.Want() != msg {
			t.Errorf("%s: says %q, want %q", pattern, b.Want(), msg)
		}
		if err == nil || !strings.Contains(err.Error(), ": "+pattern+": "+b.Want()) {
			t.Errorf("%s=%s: %v, want an error at %s", pattern, bad, err, pattern)
		}
	}
}

// limitMessages pins what validation says of a value out of the file's
// bounds (policy.Bound.Want), one of each kind.
var limitMessages = map[string]string{
	"upstream_timeout":              "want 1ms..1h",
	"fallback.deadline":             "want at most 10s",
	"fallback.instances":            "want 0..10000",
	"controller.saturation_target":  "must not be negative",
	"log.level":                     "want debug, info, warn or error",
	"identity.ipv6_prefix":          "want 1..128 (0: 64)",
	"max_body_bytes":                "want a positive number of bytes (0: the default, 10 MiB)",
	"controller.error_ratio_target": "want a ratio in (0, 1)",
}

// outsideValue is a value just outside b, and whether prop states b.
func outsideValue(b policy.Bound, prop map[string]any) (string, bool) {
	switch {
	case len(b.Enum) > 0:
		return "nope", reflect.DeepEqual(prop["enum"], b.Enum)
	case b.MaxDur > 0:
		return (b.MaxDur + 1).String(), strings.HasSuffix(prop["description"].(string), "; "+b.DurationRange())
	case !b.Range || b.Pattern != "" || b.MaxLen > 0 || b.MinItems > 0 || b.MaxItems > 0:
		return "", false // not a bound of the file's own fields (Bound.Check applies none of it)
	case b.ExclusiveMin && b.ExclusiveMax:
		return fmt.Sprint(b.Max), prop["exclusiveMaximum"] == b.Max && prop["exclusiveMinimum"] == b.Min
	case !math.IsInf(b.Max, 1):
		return fmt.Sprint(b.Max + 1), prop["maximum"] == b.Max && prop["minimum"] == b.Min
	}
	return fmt.Sprint(b.Min - 1), prop["minimum"] == b.Min && prop["maximum"] == nil
}

// TestValidateWithoutDefaults: a Config built in code without SetDefaults
// is refused where a bound wants a value a default would fill.
func TestValidateWithoutDefaults(t *testing.T) {
	err := (&Config{}).Validate()
	for _, want := range []string{"log.level: want debug, info, warn or error", "controller.period: want 100ms..1h"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
}
