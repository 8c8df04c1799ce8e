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
	if rate["type"] != "integer" || rate["minimum"] != 1.0 || rate["maximum"] != float64(limiter.MaxLimit) ||
		beta["exclusiveMaximum"] != 1.0 || key["oneOf"] == nil ||
		!strings.Contains(period["description"].(string), "100ms..1h") ||
		schemaAt(t, s, "controller", "error_ratio_target")["exclusiveMinimum"] != 0.0 ||
		!reflect.DeepEqual(schemaAt(t, s, "log", "level")["enum"], []any{"debug", "info", "warn", "error"}) {
		t.Fatalf("rate %v, beta %v, key %v, controller.period %v", rate, beta, key, period)
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

// TestSchemaLimitsAreValidation: every limit of configLimits on a plain
// field is in the schema, and validation refuses a value just outside it,
// at its path: the schema and config check read one table.
func TestSchemaLimitsAreValidation(t *testing.T) {
	s := Schema()
	for pattern, l := range configLimits {
		if strings.Contains(pattern, "*") {
			continue
		}
		prop := schemaAt(t, s, strings.Split(pattern, ".")...)
		bad, inSchema := outsideValue(l, prop)
		if !inSchema {
			t.Errorf("%s: limit %+v not in the schema %v", pattern, l, prop)
		}
		env := "THROTTLED_" + strings.ToUpper(strings.ReplaceAll(pattern, ".", "_")) + "=" + bad
		_, err := Parse([]byte(testenv.ReadmeConfig), []string{env})
		if err == nil || !strings.Contains(err.Error(), ": "+pattern+": "+l.message()) {
			t.Errorf("%s: %v, want an error at %s", env, err, pattern)
		}
	}
}

// outsideValue is a value just outside l, and whether prop states l.
func outsideValue(l limit, prop map[string]any) (string, bool) {
	switch {
	case len(l.enum) > 0:
		return "nope", reflect.DeepEqual(prop["enum"], l.enum)
	case l.maxDur > 0:
		return (l.maxDur + 1).String(), strings.Contains(prop["description"].(string), shortDur(l.maxDur))
	case l.exclusive:
		return fmt.Sprint(l.max), prop["exclusiveMaximum"] == l.max && prop["exclusiveMinimum"] == l.min
	case !math.IsInf(l.max, 1):
		return fmt.Sprint(l.max + 1), prop["maximum"] == l.max && prop["minimum"] == l.min
	}
	return fmt.Sprint(l.min - 1), prop["minimum"] == l.min
}
