package config

import (
	"strings"
	"testing"

	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/internal/testenv"
)

// controller.scope: "instance" reaches the law; unset is the fleet; a
// name it does not know, or instance without the inner loop's saturation
// to step each instance on, is an error naming the key.
func TestConfigControllerScope(t *testing.T) {
	for yaml, want := range map[string]controller.Scope{"": controller.ScopeFleet,
		"controller:\n  scope: fleet\n": controller.ScopeFleet, "controller:\n  scope: instance\n": controller.ScopeInstance} {
		c, err := Parse([]byte(testenv.ReadmeConfig+yaml), nil)
		if err != nil {
			t.Fatalf("%q: %v", yaml, err)
		}
		if got := ControllerSettings(c, c.Tiers).Scope; got != want {
			t.Errorf("%q: scope %v, want %v", yaml, got, want)
		}
	}
	for _, bad := range []struct{ yaml, want string }{
		{"controller:\n  scope: pod\n", "fleet"},
		{"controller:\n  scope: instance\nconcurrency:\n  disabled: true\n", "inner loop"},
	} {
		_, err := Parse([]byte(testenv.ReadmeConfig+bad.yaml), nil)
		if err == nil || !strings.Contains(err.Error(), "controller.scope") || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: err = %v, want one naming controller.scope and %s", bad.yaml, err, bad.want)
		}
	}
}
