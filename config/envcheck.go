package config

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/throttledhq/throttled/admin"
	"github.com/throttledhq/throttled/internal/suggest"

	"github.com/throttledhq/throttled/policy"
)

// EnvPrefix starts every configuration environment variable.
const EnvPrefix = "THROTTLED_"

// envNotConfig are THROTTLED_* variables that are not configuration: the
// admin tokens (admin.EnvTokenPrefix) and the knobs of the long tests.
var envNotConfig = []string{admin.EnvTokenPrefix, "THROTTLED_TEST_", "THROTTLED_SOAK", "THROTTLED_FLOOD_KEYS"}

// envField is a field of Config that a variable sets: its YAML path and
// its index in the struct.
type envField struct {
	path  string
	index []int
}

// envFields maps THROTTLED_<PATH> to every field of t below structs (the
// scalars, lists and the rest, which refuse the environment).
func envFields(t reflect.Type, name, path string, index []int, out map[string]envField) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := yamlName(f)
		key, p, idx := name+"_"+strings.ToUpper(tag), joinPath(path, tag), append(append([]int(nil), index...), i)
		if f.Type.Kind() == reflect.Struct && f.Type != durationType {
			envFields(f.Type, key, p, idx, out)
			continue
		}
		out[key] = envField{p, idx}
	}
}

// applyEnv sets every field named THROTTLED_<PATH> in environ, where PATH
// is the field's YAML path in upper case joined by "_"; a list takes
// comma-separated values. It reports every bad value and every unknown
// name, and returns where each field it set came from: the variable, or
// the flag that flags (variable → flag) says supplied it. A later entry of
// environ overrides an earlier one.
func applyEnv(c *Config, environ []string, flags map[string]string) (map[string]string, Report) {
	fields := map[string]envField{}
	envFields(reflect.TypeOf(*c), strings.TrimSuffix(EnvPrefix, "_"), "", nil, fields)
	vars, order := map[string]string{}, []string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, EnvPrefix) || notConfig(k) {
			continue
		}
		if _, seen := vars[k]; !seen {
			order = append(order, k)
		}
		vars[k] = v
	}
	origins := map[string]string{}
	var r Report
	for _, k := range order {
		origin := k
		if fl, ok := flags[k]; ok {
			origin = fl
		}
		f, ok := fields[k]
		if !ok {
			r = append(r, Finding{origin: k, msg: "unknown variable" + suggest.DidYouMean(k, slices.Sorted(maps.Keys(fields)))})
			continue
		}
		origins[f.path] = origin
		if err := setFromEnv(reflect.ValueOf(c).Elem().FieldByIndex(f.index), vars[k]); err != nil {
			r = append(r, Finding{origin: origin, path: f.path, msg: fmt.Sprintf("%q: %v", vars[k], err)})
		}
	}
	return origins, r
}

func notConfig(k string) bool {
	for _, p := range envNotConfig {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// setFromEnv sets a scalar, or a list of strings from comma-separated
// values.
func setFromEnv(f reflect.Value, s string) error {
	switch p := f.Addr().Interface().(type) {
	case *policy.Duration:
		var d policy.Duration
		if d.UnmarshalText([]byte(s)) != nil {
			return fmt.Errorf("want a duration such as \"1s\" or \"250ms\"")
		}
		*p = d
	case *string:
		*p = s
	case *[]string:
		*p = splitList(s)
	case *int:
		n, err := strconv.Atoi(s)
		*p = n
		return plainErr(err, "an integer")
	case *float64:
		x, err := strconv.ParseFloat(s, 64)
		*p = x
		return plainErr(err, "a number")
	case **float64:
		x, err := strconv.ParseFloat(s, 64)
		*p = &x
		return plainErr(err, "a number")
	case *bool:
		b, err := strconv.ParseBool(s)
		*p = b
		return plainErr(err, "true or false")
	default:
		return fmt.Errorf("cannot be set from the environment (set it in the file)")
	}
	return nil
}

// splitList reads "a, b,c" as [a b c].
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func plainErr(err error, want string) error {
	if err != nil {
		return fmt.Errorf("want %s", want)
	}
	return nil
}
