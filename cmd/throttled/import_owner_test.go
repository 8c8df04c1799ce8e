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
