package config

import (
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"

	"github.com/throttledhq/throttled/internal/suggest"

	"github.com/goccy/go-yaml/ast"
	"github.com/throttledhq/throttled/policy"
)

// lineIndex maps a YAML path ("tiers.free.rate", "rules[0].key") to the
// line of the file it is on.
type lineIndex map[string]int

func indexLines(file *ast.File) lineIndex {
	idx := lineIndex{}
	for _, doc := range file.Docs {
		if _, ok := idx[""]; !ok && doc.Body != nil {
			idx[""] = max(nodeLine(doc.Body), 1)
		}
		idx.walk(doc.Body, "")
	}
	return idx
}

func (idx lineIndex) walk(n ast.Node, path string) {
	switch n := n.(type) {
	case *ast.MappingNode:
		for _, mv := range n.Values {
			idx.walk(mv, path)
		}
	case *ast.MappingValueNode:
		p := joinPath(path, n.Key.GetToken().Value)
		idx[p] = n.Key.GetToken().Position.Line
		idx.walk(n.Value, p)
	case *ast.SequenceNode:
		for i, v := range n.Values {
			p := fmt.Sprintf("%s[%d]", path, i)
			idx[p] = nodeLine(v)
			idx.walk(v, p)
		}
	case *ast.AnchorNode:
		idx.walk(n.Value, path)
	case *ast.TagNode:
		idx.walk(n.Value, path)
	}
}

func nodeLine(n ast.Node) int {
	if m, ok := n.(*ast.MappingNode); ok && len(m.Values) > 0 {
		return m.Values[0].Key.GetToken().Position.Line
	}
	if n == nil || n.GetToken() == nil {
		return 0
	}
	return n.GetToken().Position.Line
}

// line is the line of path, or of its nearest ancestor in the file (0:
// none, the value is a default).
func (idx lineIndex) line(path string) int {
	if path == "" { // the document itself
		return idx[""]
	}
	for ; path != ""; path = parentPath(path) {
		if l, ok := idx[path]; ok {
			return l
		}
	}
	return 0
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

var (
	durationType   = reflect.TypeOf(policy.Duration(0))
	keySourcesType = reflect.TypeOf(policy.KeySources{})
)

// shaper checks a generic YAML value (maps, lists, scalars) against a Go
// type, recording what does not fit in plain words: unknown keys (with the
// nearest known one), wrong types, bad durations.
type shaper struct{ errs []fieldErr }

func (s *shaper) fail(path, msg string) { s.errs = append(s.errs, fieldErr{path, msg}) }

// value returns v without the parts that do not fit t, so that the rest
// still decodes, and whether v itself fits.
func (s *shaper) value(path string, v any, t reflect.Type) (any, bool) {
	if v == nil {
		return nil, true
	}
	switch {
	case t == durationType:
		return s.duration(path, v)
	case t == keySourcesType:
		if _, ok := v.(string); ok {
			return v, true
		}
		return s.value(path, v, reflect.TypeOf([]string{}))
	}
	switch t.Kind() {
	case reflect.Pointer:
		return s.value(path, v, t.Elem())
	case reflect.Struct:
		return s.object(path, v, t)
	case reflect.Map:
		return s.mapping(path, v, t)
	case reflect.Slice:
		return s.list(path, v, t)
	}
	return s.scalar(path, v, t)
}

func (s *shaper) duration(path string, v any) (any, bool) {
	var d policy.Duration
	if isCollection(v) || d.UnmarshalText([]byte(fmt.Sprint(v))) != nil {
		s.fail(path, "want a duration such as \"1s\" or \"250ms\", got "+describe(v))
		return nil, false
	}
	return fmt.Sprint(v), true
}

func (s *shaper) object(path string, v any, t reflect.Type) (any, bool) {
	m, ok := asMap(v)
	if !ok {
		s.fail(path, "want a mapping of keys, got "+describe(v))
		return nil, false
	}
	fields := map[string]reflect.Type{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		name := yamlName(t.Field(i))
		fields[name] = t.Field(i).Type
		names = append(names, name)
	}
	out := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		ft, known := fields[k]
		if !known {
			s.fail(joinPath(path, k), "unknown key"+suggest.DidYouMean(k, names))
			continue
		}
		if x, ok := s.value(joinPath(path, k), m[k], ft); ok {
			out[k] = x
		}
	}
	return out, true
}

func (s *shaper) mapping(path string, v any, t reflect.Type) (any, bool) {
	m, ok := asMap(v)
	if !ok {
		s.fail(path, "want a mapping, got "+describe(v))
		return nil, false
	}
	out := map[string]any{}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if x, ok := s.value(joinPath(path, k), m[k], t.Elem()); ok {
			out[k] = x
		}
	}
	return out, true
}

func (s *shaper) list(path string, v any, t reflect.Type) (any, bool) {
	l, ok := v.([]any)
	if !ok {
		s.fail(path, "want a list, got "+describe(v))
		return nil, false
	}
	out := make([]any, 0, len(l))
	for i, item := range l {
		x, _ := s.value(fmt.Sprintf("%s[%d]", path, i), item, t.Elem())
		out = append(out, x) // a bad item stays, as nothing: the items after it keep their index
	}
	return out, true
}

func (s *shaper) scalar(path string, v any, t reflect.Type) (any, bool) {
	want := plainType(t)
	switch t.Kind() {
	case reflect.String:
		if !isCollection(v) {
			return fmt.Sprint(v), true
		}
	case reflect.Bool:
		if _, ok := v.(bool); ok {
			return v, true
		}
	case reflect.Int, reflect.Int64:
		if n, ok := asInt(v); ok {
			return n, true
		}
	case reflect.Float64:
		switch x := v.(type) {
		case uint64, int64:
			return v, true
		case float64:
			return x, true
		}
	}
	s.fail(path, "want "+want+", got "+describe(v))
	return nil, false
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case uint64:
		return int64(x), x <= math.MaxInt64
	case int64:
		return x, true
	case float64:
		return int64(x), x == math.Trunc(x) && math.Abs(x) < 1<<62
	}
	return 0, false
}

func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case map[any]any:
		out := make(map[string]any, len(m))
		for k, x := range m {
			out[fmt.Sprint(k)] = x
		}
		return out, true
	}
	return nil, false
}

func isCollection(v any) bool {
	_, isMap := asMap(v)
	_, isList := v.([]any)
	return isMap || isList
}

// plainType names a Go type for a person editing YAML.
func plainType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	case reflect.Slice:
		return "a list"
	}
	return "a " + t.Kind().String()
}

// describe names a YAML value in an error: "ten" (quoted), 3.5, a list.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("%q", x)
	case []any:
		return "a list"
	case nil:
		return "nothing"
	}
	if _, ok := asMap(v); ok {
		return "a mapping"
	}
	return fmt.Sprint(v)
}

func yamlName(f reflect.StructField) string {
	if name := strings.Split(f.Tag.Get("yaml"), ",")[0]; name != "" {
		return name
	}
	return strings.ToLower(f.Name)
}
