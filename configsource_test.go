package throttled

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/policy"
)

// With config.source: file serve makes the store equal to the file at
// start, and the admin API refuses writes to what the file owns with 409
// naming config.source: file, while reads and pins work.
func TestServeConfigSourceFile(t *testing.T) {
	rd := testenv.StartRedis(t)
	old := configtest.Serve(t, "", rd.URL())
	old.Tiers["free"] = policy.Tier{Rate: 10, Period: policy.Duration(60e9), Burst: 10, Priority: 1}
	storeWith(t, rd.URL(), old)
	cfg := configtest.Serve(t, "", rd.URL())
	cfg.ConfigSource.Source = "file"
	s, _ := buildLogged(t, cfg)
	snap := storedConfig(t, rd.URL())
	if snap.Version != 2 || snap.UpdatedBy != "config.source: file" || snap.Config.Tiers["free"].Rate != 5 {
		t.Fatalf("store after start: version %d by %q, free %+v; want the file's rate 5 as version 2",
			snap.Version, snap.UpdatedBy, snap.Config.Tiers["free"])
	}
	hs := httptest.NewServer(s.admin.Load())
	t.Cleanup(hs.Close)
	auth := []string{"Authorization", "Bearer " + testenv.WriteToken, "If-Match", "*"}
	resp, body := testenv.Call(t, "GET", hs.URL+"/v1/tiers/free", "", auth...)
	if resp.StatusCode != 200 || !strings.Contains(body, `"rate":5`) {
		t.Fatalf("GET free: %d %s", resp.StatusCode, body)
	}
	resp, body = testenv.Call(t, "PUT", hs.URL+"/v1/tiers/free", `{"rate":1,"period":"1s","priority":1}`, auth...)
	if resp.StatusCode != 409 || !strings.Contains(body, "config.source: file") {
		t.Fatalf("PUT free: %d %s, want 409 naming config.source: file", resp.StatusCode, body)
	}
	resp, body = testenv.Call(t, "PUT", hs.URL+"/v1/keys/k9", `{"tier":"premium"}`, auth...)
	if resp.StatusCode != 409 {
		t.Fatalf("PUT key: %d %s, want 409", resp.StatusCode, body)
	}
	resp, body = testenv.Call(t, "PUT", hs.URL+"/v1/multipliers/free/pin", `{"multiplier":0.5,"ttl":"1m"}`, auth[:2]...)
	if resp.StatusCode != 201 {
		t.Fatalf("pin: %d %s, want 201", resp.StatusCode, body)
	}
}

// In store mode serve warns once when the file and the store differ,
// naming `throttled config diff`, and not when they agree.
func TestServeWarnsWhenFileAndStoreDiffer(t *testing.T) {
	rd := testenv.StartRedis(t)
	old := configtest.Serve(t, "", rd.URL())
	old.Tiers["free"] = policy.Tier{Rate: 10, Period: policy.Duration(60e9), Burst: 10, Priority: 1}
	storeWith(t, rd.URL(), old)
	_, logs := buildLogged(t, configtest.Serve(t, "", rd.URL()))
	if n := strings.Count(logs.String(), "throttled config diff"); n != 1 {
		t.Fatalf("%d warnings naming throttled config diff, want 1:\n%s", n, logs.String())
	}
	if storedConfig(t, rd.URL()).Config.Tiers["free"].Rate != 10 {
		t.Fatal("store mode changed the store")
	}
	_, logs = buildLogged(t, old)
	if strings.Contains(logs.String(), "throttled config diff") {
		t.Fatalf("warned although file and store agree:\n%s", logs.String())
	}
}

// buildLogged builds the stack of cfg (without serving) and returns its
// log.
func buildLogged(t *testing.T, cfg *config.Config) (*Instance, *testenv.SyncBuffer) {
	t.Helper()
	var logs testenv.SyncBuffer
	s, err := New(context.Background(), cfg, Options{Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, &logs
}

// With config.source: file and the store not answering at start, serve
// starts, and makes the store equal to the file once it answers.
func TestConfigSourceFileAfterStoreOutage(t *testing.T) {
	rd := testenv.StartRedis(t)
	old := configtest.Serve(t, "", rd.URL())
	old.Tiers["free"] = policy.Tier{Rate: 10, Period: policy.Duration(60e9), Burst: 10, Priority: 1}
	storeWith(t, rd.URL(), old)
	cfg := configtest.Serve(t, testenv.Upstream(t).URL, rd.URL())
	cfg.ConfigSource.Source = "file"
	rd.Pause()
	run(t, cfg)
	rd.Resume()
	testenv.WaitFor(t, 20*time.Second, "the store to hold the file's tiers", func() bool {
		return storedConfig(t, rd.URL()).Config.Tiers["free"].Rate == 5
	})
}
