package admin

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/policy"
)

// schemaProp is the part of an OpenAPI 3.0 schema object the field test
// compares.
type schemaProp struct {
	Type                 string                `json:"type"`
	Minimum              *float64              `json:"minimum"`
	Maximum              *float64              `json:"maximum"`
	ExclusiveMaximum     bool                  `json:"exclusiveMaximum"`
	Enum                 []string              `json:"enum"`
	Pattern              string                `json:"pattern"`
	MaxLength            int                   `json:"maxLength"`
	MinItems             int                   `json:"minItems"`
	MaxItems             int                   `json:"maxItems"`
	Items                *schemaProp           `json:"items"`
	OneOf                []schemaProp          `json:"oneOf"`
	Description          string                `json:"description"`
	Required             []string              `json:"required"`
	Properties           map[string]schemaProp `json:"properties"`
	AdditionalProperties *bool                 `json:"additionalProperties"`
}

// TestOpenAPIFieldsMatchCode: every field of policy.Tier and policy.Rule is in
// openapi.json with the type and the limits validation applies (Bound),
// and openapi.json has no field the code does not know, so the document
// cannot drift from the code.
func TestOpenAPIFieldsMatchCode(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]schemaProp `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		typ    reflect.Type
		bounds map[string]policy.Bound
	}{{"Tier", reflect.TypeOf(policy.Tier{}), policy.TierBounds()}, {"Rule", reflect.TypeOf(policy.Rule{}), policy.RuleBounds()}} {
		s, ok := doc.Components.Schemas[tc.name]
		if !ok {
			t.Fatalf("openapi.json has no schema %s", tc.name)
		}
		checkObject(t, tc.name, "", s, tc.typ, tc.bounds)
	}
}

func checkObject(t *testing.T, schema, prefix string, s schemaProp, typ reflect.Type, bounds map[string]policy.Bound) {
	t.Helper()
	want := map[string]reflect.Type{}
	for i := 0; i < typ.NumField(); i++ {
		name := strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]
		want[name] = typ.Field(i).Type
	}
	if _, ok := bounds[prefix+"name"]; ok && want["name"] == nil { // a tier's name is its key, and a body field
		want["name"] = reflect.TypeOf("")
	}
	if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Errorf("%s%s: type %q, additionalProperties %v: want a closed object", schema, prefix, s.Type, s.AdditionalProperties)
	}
	for name := range s.Properties {
		if _, ok := want[name]; !ok {
			t.Errorf("%s.%s%s is in openapi.json, not in the code", schema, prefix, name)
		}
	}
	var required []string
	for name, ft := range want {
		p, ok := s.Properties[name]
		if !ok {
			t.Errorf("%s.%s%s is missing from openapi.json", schema, prefix, name)
			continue
		}
		b := bounds[prefix+name]
		if b.Required {
			required = append(required, name)
		}
		if ft.Kind() == reflect.Pointer { // an optional object
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct {
			checkObject(t, schema, prefix+name+".", p, ft, bounds)
			continue
		}
		checkProp(t, schema+"."+prefix+name, p, ft, b)
	}
	sort.Strings(required)
	sort.Strings(s.Required)
	if !reflect.DeepEqual(required, s.Required) && (len(required) > 0 || len(s.Required) > 0) {
		t.Errorf("%s%s: required %v in openapi.json, %v in the code", schema, prefix, s.Required, required)
	}
}

func checkProp(t *testing.T, field string, p schemaProp, ft reflect.Type, b policy.Bound) {
	t.Helper()
	if ft == reflect.TypeOf(policy.KeySources{}) {
		if len(p.OneOf) != 2 || p.OneOf[1].Type != "array" || p.OneOf[1].Items == nil {
			t.Errorf("%s: want oneOf a string or an array", field)
			return
		}
		p = p.OneOf[1]
	}
	wantType := map[reflect.Kind]string{reflect.String: "string", reflect.Int: "integer", reflect.Int64: "integer",
		reflect.Float64: "number", reflect.Slice: "array", reflect.Bool: "boolean"}[ft.Kind()]
	if ft == reflect.TypeOf(policy.Duration(0)) {
		wantType = "string"
	}
	if p.Type != wantType {
		t.Errorf("%s: type %q, want %q", field, p.Type, wantType)
	}
	pattern := p.Pattern
	if p.Items != nil {
		pattern = p.Items.Pattern
	}
	if pattern != b.Pattern || p.MaxLength != b.MaxLen || p.MinItems != b.MinItems || p.MaxItems != b.MaxItems {
		t.Errorf("%s: pattern %q maxLength %d items %d..%d, want %q %d %d..%d", field, pattern, p.MaxLength,
			p.MinItems, p.MaxItems, b.Pattern, b.MaxLen, b.MinItems, b.MaxItems)
	}
	if !reflect.DeepEqual(p.Enum, b.Enum) {
		t.Errorf("%s: enum %v, want %v", field, p.Enum, b.Enum)
	}
	if b.Range != (p.Minimum != nil && p.Maximum != nil) ||
		b.Range && (*p.Minimum != b.Min || *p.Maximum != b.Max || p.ExclusiveMaximum != b.ExclusiveMax) {
		t.Errorf("%s: minimum %v maximum %v exclusive %v, want %+v", field, deref(p.Minimum), deref(p.Maximum),
			p.ExclusiveMaximum, b)
	}
	if ft == reflect.TypeOf(policy.Duration(0)) && b.MaxDur > 0 && !strings.Contains(p.Description, b.DurationRange()) {
		t.Errorf("%s: description %q does not state the range %s", field, p.Description, b.DurationRange())
	}
}

func deref(f *float64) any {
	if f == nil {
		return nil
	}
	return *f
}
