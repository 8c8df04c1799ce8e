package admin

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/policy"
)

type jsonObject = map[string]any

// openAPISchemas are the components.schemas of openapi.json.
func openAPISchemas(t *testing.T) map[string]jsonObject {
	t.Helper()
	var doc struct {
		Components struct {
			Schemas map[string]jsonObject `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Components.Schemas
}

// TestOpenAPIFieldsMatchCode: every field of policy.Tier and policy.Rule
// (and of each of a rule's limits) is in openapi.json with the type and
// the bounds validation applies, as policy.Bound.Schema publishes them,
// and openapi.json has no field the code does not know; a pin's multiplier
// has policy.MultiplierBound. So the document cannot drift from the code:
// change a bound in the table and this fails until openapi.json says it.
func TestOpenAPIFieldsMatchCode(t *testing.T) {
	schemas := openAPISchemas(t)
	for _, tc := range []struct {
		name   string
		typ    reflect.Type
		bounds map[string]policy.Bound
	}{{"Tier", reflect.TypeOf(policy.Tier{}), policy.TierBounds()}, {"Rule", reflect.TypeOf(policy.Rule{}), policy.RuleBounds()}} {
		s, ok := schemas[tc.name]
		if !ok {
			t.Fatalf("openapi.json has no schema %s", tc.name)
		}
		checkObject(t, schemas, tc.name+".", s, tc.typ, tc.bounds, "")
	}
	pin, _ := schemas["PinBody"]["properties"].(jsonObject)
	checkBounds(t, "PinBody.multiplier", asObject(pin["multiplier"]), policy.MultiplierBound())
}

// TestOpenAPIPatterns: every pattern in openapi.json is one of the
// tables' (a tier's name, a rule's path, method or key source).
func TestOpenAPIPatterns(t *testing.T) {
	known := map[string]bool{}
	for _, bounds := range []map[string]policy.Bound{policy.TierBounds(), policy.RuleBounds()} {
		for _, b := range bounds {
			known[b.Pattern] = b.Pattern != ""
		}
	}
	var doc any
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case jsonObject:
			for k, sub := range v {
				if p, ok := sub.(string); ok && k == "pattern" && !known[p] {
					t.Errorf("%s: pattern %q is none of policy's bounds", path, p)
				}
				walk(path+"."+k, sub)
			}
		case []any:
			for _, sub := range v {
				walk(path+"[]", sub)
			}
		}
	}
	walk("", doc)
}

// checkObject checks s, the schema of typ at field (its $ref followed),
// whose fields have their bounds in bounds at prefix.
func checkObject(t *testing.T, schemas map[string]jsonObject, field string, s jsonObject, typ reflect.Type,
	bounds map[string]policy.Bound, prefix string) {
	t.Helper()
	if ref, ok := s["$ref"].(string); ok {
		s = schemas[strings.TrimPrefix(ref, "#/components/schemas/")]
	}
	want := map[string]reflect.Type{}
	for i := 0; i < typ.NumField(); i++ {
		want[strings.Split(typ.Field(i).Tag.Get("json"), ",")[0]] = typ.Field(i).Type
	}
	if _, ok := bounds[prefix+"name"]; ok && want["name"] == nil { // a tier's name is its key, and a body field
		want["name"] = reflect.TypeOf("")
	}
	if s["type"] != "object" || s["additionalProperties"] != false {
		t.Errorf("%s: type %v, additionalProperties %v: want a closed object", field, s["type"], s["additionalProperties"])
	}
	props := asObject(s["properties"])
	for name := range props {
		if _, ok := want[name]; !ok {
			t.Errorf("%s%s is in openapi.json, not in the code", field, name)
		}
	}
	var required, documented []string
	for name, ft := range want {
		b := bounds[prefix+name]
		if b.Required {
			required = append(required, name)
		}
		p, ok := props[name].(jsonObject)
		if !ok {
			t.Errorf("%s%s is missing from openapi.json", field, name)
			continue
		}
		checkField(t, schemas, field+name, p, ft, bounds, prefix+name+".")
	}
	for _, r := range asList(s["required"]) {
		documented = append(documented, r.(string))
	}
	sort.Strings(required)
	sort.Strings(documented)
	if strings.Join(required, ",") != strings.Join(documented, ",") {
		t.Errorf("%s: required %v in openapi.json, %v in the code", field, documented, required)
	}
}

// checkField checks p, the schema of a field of type ft with the bound at
// strings.TrimSuffix(prefix, ".") (and its own fields' at prefix).
func checkField(t *testing.T, schemas map[string]jsonObject, field string, p jsonObject, ft reflect.Type,
	bounds map[string]policy.Bound, prefix string) {
	t.Helper()
	if ft.Kind() == reflect.Pointer { // an optional object
		ft = ft.Elem()
	}
	switch {
	case ft.Kind() == reflect.Struct:
		checkObject(t, schemas, field+".", p, ft, bounds, prefix)
		return
	case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
		checkObject(t, schemas, field+"[].", asObject(p["items"]), ft.Elem(), bounds, prefix)
	}
	wantType := map[reflect.Kind]string{reflect.String: "string", reflect.Int: "integer", reflect.Int64: "integer",
		reflect.Float64: "number", reflect.Slice: "array", reflect.Bool: "boolean"}[ft.Kind()]
	switch ft {
	case reflect.TypeOf(policy.Duration(0)):
		wantType = "string"
	case reflect.TypeOf(policy.KeySources{}):
		wantType = "" // a string or an array of them
		if oneOf := asList(p["oneOf"]); len(oneOf) != 2 || asObject(oneOf[1])["type"] != "array" {
			t.Errorf("%s: want oneOf a string or an array", field)
		}
	}
	if p["type"] != nil || wantType != "" {
		if p["type"] != wantType {
			t.Errorf("%s: type %v, want %q", field, p["type"], wantType)
		}
	}
	checkBounds(t, field, p, bounds[strings.TrimSuffix(prefix, ".")])
}

// boundKeywords are the keywords of a schema that policy.Bound.Schema
// writes, besides the durations at the end of the description.
var boundKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "enum", "pattern",
	"maxLength", "minItems", "maxItems"}

// checkBounds checks that p, an OpenAPI 3.0 schema, states exactly b: its
// bound keywords (of its items and oneOf too) are those b.Schema adds to p
// without them, and its description states b's durations.
func checkBounds(t *testing.T, field string, p jsonObject, b policy.Bound) {
	t.Helper()
	got, err := from30(clone(p))
	if err != nil {
		t.Errorf("%s: %v", field, err)
		return
	}
	want := b.Schema(withoutBounds(clone(got)))
	desc, _ := got["description"].(string)
	delete(got, "description")
	delete(want, "description")
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(want)
	if string(g) != string(w) {
		t.Errorf("%s: openapi.json says\n  %s\nthe code's bound\n  %s", field, g, w)
	}
	if b.MaxDur > 0 && !slices.Contains(strings.Split(desc, "; "), b.DurationRange()) {
		t.Errorf("%s: description %q does not state the range %s", field, desc, b.DurationRange())
	}
}

// from30 writes OpenAPI 3.0's exclusive bounds ("maximum": 1,
// "exclusiveMaximum": true) as draft 2020-12 does ("exclusiveMaximum": 1),
// in s and its items and oneOf.
func from30(s jsonObject) (jsonObject, error) {
	for _, k := range [][2]string{{"minimum", "exclusiveMinimum"}, {"maximum", "exclusiveMaximum"}} {
		switch ex := s[k[1]]; {
		case ex == true && s[k[0]] != nil:
			s[k[1]] = s[k[0]]
			delete(s, k[0])
		case ex == false:
			delete(s, k[1])
		case ex != nil:
			return nil, fmt.Errorf("%s %v: OpenAPI 3.0 wants a boolean, with %s", k[1], ex, k[0])
		}
	}
	for _, sub := range subSchemas(s) {
		if _, err := from30(sub); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// withoutBounds deletes the bound keywords of s and its items and oneOf.
func withoutBounds(s jsonObject) jsonObject {
	for _, k := range boundKeywords {
		delete(s, k)
	}
	for _, sub := range subSchemas(s) {
		withoutBounds(sub)
	}
	return s
}

func subSchemas(s jsonObject) []jsonObject {
	var subs []jsonObject
	if items, ok := s["items"].(jsonObject); ok {
		subs = append(subs, items)
	}
	for _, o := range asList(s["oneOf"]) {
		subs = append(subs, asObject(o))
	}
	return subs
}

func clone(s jsonObject) jsonObject {
	var c jsonObject
	b, _ := json.Marshal(s)
	_ = json.Unmarshal(b, &c)
	return c
}

func asObject(v any) jsonObject { o, _ := v.(jsonObject); return o }
func asList(v any) []any        { l, _ := v.([]any); return l }
