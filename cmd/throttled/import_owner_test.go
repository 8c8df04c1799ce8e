package main

import (
	"os"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
)

// While an instance with config.source: file owns the store, `config
// import` refuses, naming file mode and that instance, and writes nothing;
// --force imports anyway.
func TestConfigImportRefusedInFileMode(t *testing.T) {
	rd := testenv.StartRedis(t)
	cfg := configtest.Serve(t, testenv.Upstream(t).URL, rd.URL())
	cfg.ConfigSource.Source = "file"
	addrs := startServe(t, cfg)
	changed := strings.Replace(testenv.ServeConfig("", rd.URL()), "free:    { rate: 5,", "free:    { rate: 9,", 1)
	path := writeFile(t, "import.yaml", changed)
	code, _, stderr := runCLI(t, "config", "import", path)
	host, _ := os.Hostname()
	if code != 1 || !strings.Contains(stderr, "config.source: file") || !strings.Contains(stderr, "instance "+host+"-") {
		t.Fatalf("import under file mode: exit %d, %s\nwant 1 naming config.source: file and instance %s-PID", code, stderr, host)
	}
	tier := func() string {
		_, body := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/v1/tiers/free", "", "Authorization", "Bearer "+testenv.WriteToken)
		return body
	}
	if body := tier(); !strings.Contains(body, `"rate":5`) {
		t.Fatalf("free after a refused import: %s, want the file's rate 5", body)
	}
	if code, out, stderr := runCLI(t, "config", "import", "--force", path); code != 0 {
		t.Fatalf("import --force: exit %d\n%s%s", code, out, stderr)
	}
	if body := tier(); !strings.Contains(body, `"rate":9`) {
		t.Fatalf("free after import --force: %s, want rate 9", body)
	}
}

// `throttled admin` pins, re-pins and unpins a tier of a real serve with
// the URL and token from THROTTLED_ADMIN_URL and THROTTLED_ADMIN_TOKEN,
// fetching the ETag itself; a bad command line exits 2.
func TestAdminCLIAgainstServe(t *testing.T) {
	addrs := startServe(t, configtest.Serve(t, testenv.Upstream(t).URL, ""))
	t.Setenv("THROTTLED_ADMIN_URL", "http://"+addrs["admin"])
	t.Setenv("THROTTLED_ADMIN_TOKEN", testenv.WriteToken)
	for _, args := range [][]string{{"admin", "pin", "free", "0.5"}, {"admin", "pin", "free", "1", "--ttl", "2m"}} {
		if code, out, stderr := runCLI(t, args...); code != 0 || !strings.Contains(out, "free: pinned at") {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	_, body := testenv.Call(t, "GET", "http://"+addrs["admin"]+"/v1/multipliers/free/pin", "", "Authorization", "Bearer "+testenv.WriteToken)
	if !strings.Contains(body, `"multiplier":1`) {
		t.Fatalf("pin after re-pinning to 1: %s", body)
	}
	if code, out, stderr := runCLI(t, "admin", "unpin", "free"); code != 0 {
		t.Fatalf("unpin: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := runCLI(t, "admin", "pin", "free"); code != 2 || !strings.Contains(stderr, "MULTIPLIER") {
		t.Fatalf("pin without a multiplier: exit %d %s, want 2 with the usage", code, stderr)
	}
}
