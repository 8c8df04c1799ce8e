package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/throttledhq/throttled/policy"
)

// errTooLarge reports a request body over Settings.MaxBodyBytes (HTTP 413, field "body").
var errTooLarge = errors.New("admin: request body too large")

// readBody reads at most max bytes of r; more is errTooLarge.
func readBody(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, fieldErr("body", "cannot read the request body: %v", err)
	}
	if int64(len(b)) > max {
		return nil, errTooLarge
	}
	return b, nil
}

// decodeStrict decodes exactly one JSON value from b into v. Unknown fields
// (matched case-sensitively), values of the wrong type, bad durations and
// trailing data are *FieldError values naming the field, as a path below
// prefix ("tiers.free.rate", "rules[1].key").
func decodeStrict(b []byte, v any, prefix string) error {
	if len(bytes.TrimSpace(b)) == 0 {
		return fieldErr(orBody(prefix), "empty body: want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var generic any
	if err := dec.Decode(&generic); err != nil {
		return fieldErr(orBody(prefix), "invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fieldErr(orBody(prefix), "trailing data after the JSON value (at byte %d)", dec.InputOffset())
	}
	if fe := walk(generic, reflect.TypeOf(v).Elem(), prefix); fe != nil {
		return fe
	}
	dec = json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fieldErr(join(prefix, te.Field), "want %v, got %s", te.Type, te.Value)
		}
		return fieldErr(orBody(prefix), "%s", strings.TrimPrefix(err.Error(), "policy: "))
	}
	return nil
}

func orBody(prefix string) string {
	if prefix == "" {
		return "body"
	}
	return prefix
}

func join(path, key string) string {
	if key == "" {
		key = `""`
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// walk checks the generic JSON value v against type t and returns the first
// problem, naming its path. JSON null is accepted anywhere (a zero value).
func walk(v any, t reflect.Type, path string) *policy.FieldError {
	if v == nil {
		return nil
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return walkUnmarshaler(v, t, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		return walkStruct(v, t, path)
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return wrongType(path, "an object", v)
		}
		for _, k := range sortedKeys(obj) {
			if fe := walk(obj[k], t.Elem(), join(path, k)); fe != nil {
				return fe
			}
		}
	case reflect.Slice:
		arr, ok := v.([]any)
		if !ok {
			return wrongType(path, "a list", v)
		}
		for i, e := range arr {
			if fe := walk(e, t.Elem(), path+"["+strconv.Itoa(i)+"]"); fe != nil {
				return fe
			}
		}
	default:
		return walkScalar(v, t, path)
	}
	return nil
}

func walkUnmarshaler(v any, t reflect.Type, path string) *policy.FieldError {
	b, err := json.Marshal(v)
	if err != nil {
		return fieldErr(orBody(path), "%v", err)
	}
	if err := reflect.New(t).Interface().(json.Unmarshaler).UnmarshalJSON(b); err != nil {
		return fieldErr(orBody(path), "%s", strings.TrimPrefix(err.Error(), "policy: "))
	}
	return nil
}

func walkStruct(v any, t reflect.Type, path string) *policy.FieldError {
	obj, ok := v.(map[string]any)
	if !ok {
		return wrongType(path, "an object", v)
	}
	fields := jsonFields(t, map[string]reflect.Type{})
	for _, k := range sortedKeys(obj) {
		ft, ok := fields[k]
		if !ok {
			return fieldErr(join(path, k), "unknown field")
		}
		if fe := walk(obj[k], ft, join(path, k)); fe != nil {
			return fe
		}
	}
	return nil
}

// jsonFields maps the JSON names of t's fields (embedded structs flattened)
// to their types.
func jsonFields(t reflect.Type, out map[string]reflect.Type) map[string]reflect.Type {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		switch {
		case name == "-":
		case f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct:
			jsonFields(f.Type, out)
		case !f.IsExported():
		case name == "":
			out[f.Name] = f.Type
		default:
			out[name] = f.Type
		}
	}
	return out
}

func walkScalar(v any, t reflect.Type, path string) *policy.FieldError {
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			return wrongType(path, "a string", v)
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			return wrongType(path, "true or false", v)
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(path, "an integer", v)
		}
		if _, err := strconv.ParseInt(n.String(), 10, t.Bits()); err != nil {
			return fieldErr(orBody(path), "%s: want an integer of at most %d bits", clip([]byte(n)), t.Bits())
		}
	case reflect.Float32, reflect.Float64:
		n, ok := v.(json.Number)
		if !ok {
			return wrongType(path, "a number", v)
		}
		if _, err := strconv.ParseFloat(n.String(), t.Bits()); err != nil {
			return fieldErr(orBody(path), "%s: not a finite number", clip([]byte(n)))
		}
	}
	return nil
}

func wrongType(path, want string, v any) *policy.FieldError {
	got := "a string"
	switch v.(type) {
	case map[string]any:
		got = "an object"
	case []any:
		got = "a list"
	case json.Number:
		got = "a number"
	case bool:
		got = "a boolean"
	}
	return fieldErr(orBody(path), "want %s, got %s", want, got)
}

// peekName returns the "name" string of a JSON object, or "".
func peekName(b []byte) string {
	var p struct {
		Name any `json:"name"`
	}
	if json.Unmarshal(b, &p) != nil {
		return ""
	}
	s, _ := p.Name.(string)
	return s
}

func fieldErr(field, format string, a ...any) *policy.FieldError {
	return &policy.FieldError{Field: field, Msg: fmt.Sprintf(format, a...)}
}

// clip shortens raw input quoted in error messages.
func clip(b []byte) string {
	const n = 64
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
