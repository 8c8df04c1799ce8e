package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/policy"
)

// richConfig uses every field the store holds, and keys and names YAML
// could misread (numbers, booleans, colons, a leading #).
const richConfig = `tiers:
  free:    { rate: 10, period: 1s, burst: 20, priority: 10, beta: 0.5 }
  premium: { rate: 100, period: 1m, priority: 1, algorithm: gcra, alpha: 0.2, beta: 0.9, floor: 0.1, ceiling: 0.95 }
  "yes":   { rate: 1, period: 1h30m, priority: 5, algorithm: sliding_window_counter }
rules:
  - name: writes
    match: { path: /api/, methods: [POST, PUT] }
    key: [api_key, "header:X-Tenant"]
    algorithm: fixed_window
    limit: 5
    period: 10s
    burst: 5
    cost: 2
    mode: shadow
    fallback: allow
  - name: per-ip
    match: { path: / }
    key: ip
    mode: delay
    max_wait: 250ms
default_tier: free
anonymous_tier: "yes"
assignments:
  "123": premium
  "key: with colon": free
  "#hash": premium
  "true": free
`

// runCLI runs throttled with args and returns its exit status and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// storedConfig loads the configuration stored at url (prefix throttled:).
func storedConfig(t *testing.T, url string) policy.Snapshot {
	t.Helper()
	cfg := &config.Config{Redis: config.RedisConfig{URL: url}}
	cfg.SetDefaults()
	s, err := openStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	snap, err := policy.Load(context.Background(), s.st)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// withoutComments drops the export's header comments.
func withoutComments(s string) string {
	var keep []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "#") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "")
}

// Export then import gives back exactly the configuration exported, and
// importing it over its own store writes nothing.
func TestConfigExportImportRoundTrip(t *testing.T) {
	rd := testenv.StartRedis(t)
	url0, url1 := "redis://"+rd.Addr()+"/0", "redis://"+rd.Addr()+"/1"
	file := writeFile(t, "rich.yaml", richConfig)
	if code, out, errs := runCLI(t, "config", "import", "--redis-url", url0, file); code != 0 || !strings.Contains(out, "imported") {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	parsed, err := config.Parse([]byte(richConfig), nil)
	if err != nil {
		t.Fatal(err)
	}
	first := storedConfig(t, url0)
	if got, want := jsonOf(t, first.Config), jsonOf(t, parsed.Policy()); got != want {
		t.Fatalf("stored after import:\n%s\nwant the file's:\n%s", got, want)
	}
	code, exported, errs := runCLI(t, "config", "export", "--redis-url", url0)
	if code != 0 || !strings.HasPrefix(exported, "# throttled config export: store redis://") {
		t.Fatalf("export: exit %d\n%s%s", code, exported, errs)
	}
	exp := writeFile(t, "exported.yaml", exported)
	if code, out, errs := runCLI(t, "config", "import", "--redis-url", url1, exp); code != 0 {
		t.Fatalf("import of the export: exit %d\n%s%s", code, out, errs)
	}
	if got, want := jsonOf(t, storedConfig(t, url1).Config), jsonOf(t, first.Config); got != want {
		t.Fatalf("round trip changed the configuration:\n%s\nwant:\n%s", got, want)
	}
	_, again, _ := runCLI(t, "config", "export", "--redis-url", url1)
	if withoutComments(again) != withoutComments(exported) {
		t.Fatalf("second export differs:\n%s\nfirst:\n%s", again, exported)
	}
	code, out, _ := runCLI(t, "config", "import", "--redis-url", url0, exp)
	if code != 0 || !strings.Contains(out, "nothing written") || storedConfig(t, url0).Version != first.Version {
		t.Fatalf("import over its own store: exit %d %q, want nothing written at version %d", code, out, first.Version)
	}
}

// diff exits 0 when file and store are the same, 1 with a unified diff
// from the store to the file when they differ, 2 on trouble.
func TestConfigDiffExitStatus(t *testing.T) {
	rd := testenv.StartRedis(t)
	url := rd.URL()
	file := writeFile(t, "a.yaml", richConfig)
	if code, out, errs := runCLI(t, "config", "import", "--redis-url", url, file); code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, "config", "diff", "--redis-url", url, file); code != 0 || out != "" {
		t.Fatalf("diff of equal: exit %d %q %q, want 0 and no output", code, out, errs)
	}
	// A spelling of the same values is no difference.
	same := writeFile(t, "same.yaml", strings.Replace(richConfig, "period: 1m,", "period: 60s,", 1))
	if code, out, _ := runCLI(t, "config", "diff", same, "--redis-url", url); code != 0 {
		t.Fatalf("diff of 1m vs 60s: exit %d\n%s", code, out)
	}
	changed := writeFile(t, "b.yaml", strings.NewReplacer("rate: 10,", "rate: 3,", "cost: 2", "cost: 3").Replace(richConfig))
	code, out, _ := runCLI(t, "config", "diff", "--redis-url", url, changed)
	for _, want := range []string{"--- store redis://", "version 1\n+++ " + changed + "\n", "-    rate: 10\n+    rate: 3\n",
		"@@ - name: writes\n", "-    cost: 2\n+    cost: 3\n"} {
		if code != 1 || !strings.Contains(out, want) {
			t.Fatalf("diff: exit %d, want 1 and %q in:\n%s", code, want, out)
		}
	}
	for _, args := range [][]string{{"diff", "--redis-url", url, "/nonexistent.yaml"}, {"diff", "--redis-url", url},
		{"diff", "--nope", file}, {"diff", file}} {
		if code, _, errs := runCLI(t, append([]string{"config"}, args...)...); code != 2 || errs == "" {
			t.Errorf("config %v: exit %d %q, want 2 and a message", args, code, errs)
		}
	}
}

// import writes only over the version it read (or --if-version names): a
// store changed since is left alone, and the error names both versions.
func TestConfigImportIfVersion(t *testing.T) {
	rd := testenv.StartRedis(t)
	url := rd.URL()
	file := writeFile(t, "a.yaml", richConfig)
	if code, out, errs := runCLI(t, "config", "import", "--redis-url", url, file); code != 0 {
		t.Fatalf("import: exit %d\n%s%s", code, out, errs)
	}
	changed := writeFile(t, "b.yaml", strings.Replace(richConfig, "rate: 10,", "rate: 3,", 1))
	code, out, errs := runCLI(t, "config", "import", "--redis-url", url, "--if-version", "1", changed)
	if code != 0 || storedConfig(t, url).Config.Tiers["free"].Rate != 3 {
		t.Fatalf("import over version 1: exit %d\n%s%s", code, out, errs)
	}
	// Someone else wrote version 2 meanwhile; an import that read version 1 is refused.
	before := storedConfig(t, url)
	code, out, errs = runCLI(t, "config", "import", "--redis-url", url, "--if-version", "1", file)
	if code != 1 || !strings.Contains(errs, "at version 2, not version 1") || !strings.Contains(errs, "config diff") {
		t.Fatalf("stale import: exit %d %q %q, want 1 naming versions 2 and 1", code, out, errs)
	}
	if after := storedConfig(t, url); jsonOf(t, after) != jsonOf(t, before) {
		t.Fatalf("a refused import changed the store: %+v", after)
	}
	code, out, errs = runCLI(t, "config", "import", "--redis-url", url, "--if-version", "1", "--force", file)
	if snap := storedConfig(t, url); code != 0 || snap.Version != 3 || snap.Config.Tiers["free"].Rate != 10 {
		t.Fatalf("forced import: exit %d, version %d\n%s%s", code, snap.Version, out, errs)
	}
}
