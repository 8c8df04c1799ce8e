package limiter_test

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The core stays on the standard library: a net/http service that uses the
// in-memory store pulls in no Echo, JWT, OpenTelemetry, Prometheus or
// go-redis.
func TestCoreImportsTheStandardLibraryOnly(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, ".") && !strings.HasPrefix(dep, "github.com/throttledhq/throttled/internal/") &&
			dep != "github.com/throttledhq/throttled/limiter" {
			t.Errorf("the core depends on %s", dep)
		}
	}
}

// Every package under limiter/ has one job: at most 12 non-test files, none
// of 400 lines or more, and a doc.go saying what the job is.
func TestPackagesStaySmall(t *testing.T) {
	dirs, _ := filepath.Glob("*")
	dirs = append(dirs, ".")
	for _, d := range dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() || d == "testdata" {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(d, "*.go"))
		n, hasDoc := 0, false
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			n++
			hasDoc = hasDoc || filepath.Base(f) == "doc.go"
			if lines := countLines(t, f); lines >= 400 {
				t.Errorf("%s has %d lines, want < 400", f, lines)
			}
		}
		if n == 0 {
			continue
		}
		if n > 12 {
			t.Errorf("limiter/%s has %d non-test files, want ≤ 12", d, n)
		}
		if !hasDoc {
			t.Errorf("limiter/%s has no doc.go", d)
		}
	}
}

func countLines(t *testing.T, path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for s := bufio.NewScanner(bytes.NewReader(b)); s.Scan(); {
		n++
	}
	return n
}
