package policy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter/multiplier"
)

func TestDurationJSON(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{`"1s"`, time.Second, ""},
		{`"250ms"`, 250 * time.Millisecond, ""},
		{`"1h30m"`, 90 * time.Minute, ""},
		{`"0s"`, 0, ""},
		{`"-1s"`, 0, `"-1s" must not be negative`},
		{`"1x"`, 0, `duration "1x"`},
		{`"1"`, 0, `duration "1"`},
		{`1000`, 0, `duration 1000`},
		{`null`, 0, ``},
	} {
		var d Duration
		err := json.Unmarshal([]byte(c.in), &d)
		if c.err == "" && (err != nil || d.D() != c.want) {
			t.Errorf("%s: %v %v", c.in, d, err)
		}
		if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s: error %v, want %q", c.in, err, c.err)
		}
	}
	if b, _ := json.Marshal(Duration(1500 * time.Millisecond)); string(b) != `"1.5s"` {
		t.Errorf("marshal: %s", b)
	}
}

// yamlScalar imitates how a YAML library calls UnmarshalYAML: it decodes
// the node (here a JSON value) into whatever it is given.
func yamlScalar(js string) func(any) error {
	return func(v any) error { return json.Unmarshal([]byte(js), v) }
}

func TestYAMLUnmarshalers(t *testing.T) {
	var d Duration
	if err := d.UnmarshalYAML(yamlScalar(`"2m"`)); err != nil || d.D() != 2*time.Minute {
		t.Errorf("duration: %v %v", d, err)
	}
	if err := d.UnmarshalYAML(yamlScalar(`"-2m"`)); err == nil {
		t.Error("negative duration accepted")
	}
	var k KeySources
	if err := k.UnmarshalYAML(yamlScalar(`"ip"`)); err != nil || !reflect.DeepEqual(k, KeySources{"ip"}) {
		t.Errorf("key string: %v %v", k, err)
	}
	if err := k.UnmarshalYAML(yamlScalar(`["ip","jwt"]`)); err != nil || !reflect.DeepEqual(k, KeySources{"ip", "jwt"}) {
		t.Errorf("key list: %v %v", k, err)
	}
	if err := k.UnmarshalYAML(yamlScalar(`{"a":1}`)); err == nil {
		t.Error("key object accepted")
	}
}

// Every field of the document's types has json and yaml tags with the same
// snake_case name and options, so cmd/throttled's YAML reads what the API
// writes and `throttled config export` leaves out what JSON leaves out
// (admin's TestTags checks its own types).
func TestTags(t *testing.T) {
	for _, v := range []any{Tier{}, Rule{}, Match{}, Limit{}, Lease{}, Config{}, Pin{}, AuditEntry{}, Snapshot{}} {
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			f := rt.Field(i)
			js, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if js == "" || f.Tag.Get("json") != f.Tag.Get("yaml") || strings.ToLower(js) != js {
				t.Errorf("%s.%s: json %q yaml %q", rt.Name(), f.Name, js, f.Tag.Get("yaml"))
			}
		}
	}
}

func TestWithDefaults(t *testing.T) {
	got := Tier{Rate: 1, Period: sec(1), Beta: 0.9}.WithDefaults()
	want := Tier{Rate: 1, Period: sec(1), Algorithm: "token_bucket", Alpha: multiplier.DefaultAlpha, Beta: 0.9, Floor: multiplier.DefaultFloor, Ceiling: multiplier.DefaultCeiling}
	if got != want {
		t.Fatalf("%+v", got)
	}
}
