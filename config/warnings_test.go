package config

import (
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
)

// TestImplicitDefaultTierWarned: without default_tier, clients without an
// assignment (and anonymous ones) take the lowest-priority tier, so adding a
// tier of lower priority moves them all to it; config check warns, naming
// the tier they take now. Naming default_tier silences it.
func TestImplicitDefaultTierWarned(t *testing.T) {
	implicit := strings.Replace(testenv.ReadmeConfig, "default_tier: free   # clients without an assignment; anonymous ones too\n", "", 1)
	for _, tc := range []struct {
		name, src string
		want      string
	}{
		{"implicit", implicit, `warning: default_tier: not set: clients without an assignment and anonymous ones take the lowest-priority tier, now "free"; a tier added with a lower priority would take them all: name it`},
		{"named", testenv.ReadmeConfig, ""},
		{"only anonymous named", strings.Replace(implicit, "rules:", "anonymous_tier: free\nrules:", 1),
			`warning: default_tier: not set: clients without an assignment take the lowest-priority tier, now "free"; a tier added with a lower priority would take them all: name it`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, warnings, err := LoadChecked(testenv.WriteFile(t, tc.src), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			for _, w := range warnings {
				if w.path == "default_tier" {
					got = w.String()
				}
			}
			if !strings.HasSuffix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("warning %q, want one ending %q", got, tc.want)
			}
		})
	}
}
