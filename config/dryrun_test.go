package config

import (
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter/enforce"
)

// TestDryRunKeys: dry_run (top level) is the enforcers' dry run of every
// throttling refusal, controller.dry_run of the load shedding only; both
// from the file or THROTTLED_*; dry_run wins; a bad value names its key;
// the schema has both; config check warns while either is on.
func TestDryRunKeys(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        []string
		want       enforce.DryRun
		warn       string
	}{
		{name: "neither", want: enforce.DryRunOff},
		{name: "controller.dry_run", yaml: "controller:\n  dry_run: true\n", want: enforce.DryRunLoad, warn: "controller.dry_run"},
		{name: "dry_run", yaml: "dry_run: true\n", want: enforce.DryRunAll, warn: "dry_run"},
		{name: "both", yaml: "dry_run: true\ncontroller:\n  dry_run: true\n", want: enforce.DryRunAll, warn: "dry_run"},
		{name: "environment", env: []string{"THROTTLED_CONTROLLER_DRY_RUN=true"}, want: enforce.DryRunLoad, warn: "controller.dry_run"},
		{name: "environment, top level", env: []string{"THROTTLED_DRY_RUN=true"}, want: enforce.DryRunAll, warn: "dry_run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, warnings, err := LoadChecked(testenv.WriteFile(t, testenv.ReadmeConfig+tc.yaml), tc.env, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.DryRunMode(); got != tc.want {
				t.Errorf("DryRunMode %v, want %v", got, tc.want)
			}
			var got []string
			for _, w := range warnings {
				if strings.HasSuffix(w.path, "dry_run") {
					got = append(got, w.path)
				}
			}
			if strings.Join(got, ",") != tc.warn {
				t.Errorf("dry run warnings %q, want %q", got, tc.warn)
			}
		})
	}
	for _, bad := range []string{"dry_run: maybe\n", "controller:\n  dry_run: 2\n"} {
		key := strings.TrimSuffix(strings.Fields(bad)[0], ":")
		if _, err := Parse([]byte(testenv.ReadmeConfig+bad), nil); err == nil || !strings.Contains(err.Error(), "dry_run") {
			t.Errorf("%q: %v, want an error naming %s", bad, err, key)
		}
	}
	props := Schema()["properties"].(map[string]any)
	ctl := props["controller"].(map[string]any)["properties"].(map[string]any)
	for key, s := range map[string]any{"dry_run": props["dry_run"], "controller.dry_run": ctl["dry_run"]} {
		if m, ok := s.(map[string]any); !ok || m["type"] != "boolean" {
			t.Errorf("schema of %s: %v, want a boolean", key, s)
		}
	}
}
