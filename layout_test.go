package throttled

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/throttledhq/throttled"

// TestHouseRules holds the packages to the rules of the layout (README,
// Development): nothing under limiter/ imports config, policy, admin,
// proxy, controller or the root; admin and policy never import config or
// the root; nothing imports cmd; cmd/throttled holds the command line
// only, within 1,500 lines.
func TestHouseRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := func(pkg string) []string {
		switch {
		case strings.HasPrefix(pkg, module+"/limiter"):
			return []string{"/config", "/policy", "/admin", "/proxy", "/controller", ""}
		case pkg == module+"/admin" || pkg == module+"/policy":
			return []string{"/config", ""}
		}
		return nil
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, imports, _ := strings.Cut(line, " ")
		for _, imp := range strings.Fields(imports) {
			if strings.HasPrefix(imp, module+"/cmd/") {
				t.Errorf("%s imports %s: nothing imports cmd", pkg, imp)
			}
			for _, f := range forbidden(pkg) {
				if imp == module+f {
					t.Errorf("%s imports %s", pkg, imp)
				}
			}
		}
	}
	files, _ := filepath.Glob("cmd/throttled/*.go")
	lines := 0
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			lines += countLines(t, f)
		}
	}
	if lines > 1500 {
		t.Errorf("cmd/throttled holds %d non-test lines, want ≤ 1,500: the command line only", lines)
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
