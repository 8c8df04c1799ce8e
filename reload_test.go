package throttled

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/policy"
)

// runLogged builds cfg's Instance, runs it until the test ends, and
// returns its log.
func runLogged(t *testing.T, cfg *config.Config) (*Instance, *testenv.SyncBuffer) {
	t.Helper()
	s, logs := buildLogged(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s, logs
}

// withFreeRate is a copy of cfg (as parsed anew) whose free tier has rate.
func withFreeRate(t *testing.T, redisURL string, source string, rate int64) *config.Config {
	t.Helper()
	c := configtest.Serve(t, "", redisURL)
	c.ConfigSource.Source = source
	free := c.Tiers["free"]
	free.Rate, free.Burst = rate, rate
	c.Tiers["free"] = free
	return c
}

// With config.source: file a reload makes the store hold the new file's
// tiers, and the instance enforces them; a changed listen address is named
// in one warning, as a restart-only setting.
func TestReloadFileModeAppliesTiers(t *testing.T) {
	rd := testenv.StartRedis(t)
	s, logs := runLogged(t, withFreeRate(t, rd.URL(), "file", 5))
	next := withFreeRate(t, rd.URL(), "file", 7)
	next.Admin.Listen = "127.0.0.1:1"
	if err := s.Reload(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	snap := storedConfig(t, rd.URL())
	if got := snap.Config.Tiers["free"].Rate; got != 7 {
		t.Fatalf("store's free rate after reload: %d, want 7", got)
	}
	testenv.WaitFor(t, 10*time.Second, "the instance to apply the reloaded version", func() bool {
		return testutil.ToFloat64(s.configVersion) == float64(snap.Version)
	})
	warn := testenv.GrepLines(logs.String(), "take effect only at restart")
	if strings.Count(warn, "take effect only at restart") != 1 || !strings.Contains(warn, "admin.listen") || strings.Contains(warn, "tiers") {
		t.Fatalf("restart-only warnings:\n%s\nwant one naming admin.listen and not tiers", warn)
	}
	if d := testutil.ToFloat64(s.src.drift); d != 0 {
		t.Fatalf("throttled_config_drift %v after reload, want 0", d)
	}
}

// A reloaded file that does not validate is refused with its error
// logged, and nothing is applied.
func TestReloadRefusesBadFile(t *testing.T) {
	rd := testenv.StartRedis(t)
	s, logs := runLogged(t, withFreeRate(t, rd.URL(), "file", 5))
	before := storedConfig(t, rd.URL()).Version
	bad := withFreeRate(t, rd.URL(), "file", 0)
	err := s.Reload(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "tiers.free.rate") {
		t.Fatalf("Reload of a tier with rate 0: %v, want an error naming tiers.free.rate", err)
	}
	if snap := storedConfig(t, rd.URL()); snap.Version != before || snap.Config.Tiers["free"].Rate != 5 {
		t.Fatalf("store after a refused reload: version %d (was %d), free rate %d", snap.Version, before, snap.Config.Tiers["free"].Rate)
	}
	if !strings.Contains(logs.String(), "config reload refused: nothing applied") {
		t.Fatalf("no refusal logged:\n%s", logs.String())
	}
}

// In store mode a reload logs the file's diff against the store, writes
// nothing, and throttled_config_drift says they differ.
func TestReloadStoreModeLogsDiff(t *testing.T) {
	rd := testenv.StartRedis(t)
	s, logs := runLogged(t, withFreeRate(t, rd.URL(), "store", 5))
	testenv.WaitFor(t, 10*time.Second, "the store to be seeded", func() bool { return storedConfig(t, rd.URL()).Version > 0 })
	before := storedConfig(t, rd.URL()).Version
	if err := s.Reload(context.Background(), withFreeRate(t, rd.URL(), "store", 9)); err != nil {
		t.Fatal(err)
	}
	if snap := storedConfig(t, rd.URL()); snap.Version != before || snap.Config.Tiers["free"].Rate != 5 {
		t.Fatalf("store mode wrote the store: version %d (was %d), free rate %d", snap.Version, before, snap.Config.Tiers["free"].Rate)
	}
	line := testenv.GrepLines(logs.String(), "differ from the store")
	if !strings.Contains(line, "rate: 9") || !strings.Contains(line, "rate: 5") {
		t.Fatalf("diff logged:\n%s\nwant the file's rate 9 against the store's 5", line)
	}
	if d := testutil.ToFloat64(s.src.drift); d != 1 {
		t.Fatalf("throttled_config_drift %v, want 1", d)
	}
}

// In file mode a store written around the file (config import --force)
// sets throttled_config_drift and is logged with its diff; the next
// reload puts the file back with a WARN naming what it overwrote.
func TestFileModeDriftAndOverwrite(t *testing.T) {
	rd := testenv.StartRedis(t)
	cfg := withFreeRate(t, rd.URL(), "file", 5)
	s, logs := runLogged(t, cfg)
	around := withFreeRate(t, rd.URL(), "file", 11).Policy()
	if _, _, err := policy.Replace(context.Background(), policyStore(t, rd.URL()), around,
		policy.ReplaceSettings{Force: true, Who: "config import"}); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 10*time.Second, "throttled_config_drift 1", func() bool { return testutil.ToFloat64(s.src.drift) == 1 })
	if line := testenv.GrepLines(logs.String(), "changed around the file"); !strings.Contains(line, "rate: 11") {
		t.Fatalf("drift log:\n%s\nwant the diff with the store's rate 11", logs.String())
	}
	if err := s.Reload(context.Background(), withFreeRate(t, rd.URL(), "file", 5)); err != nil {
		t.Fatal(err)
	}
	line := testenv.GrepLines(logs.String(), "overwrote changes made around it")
	if !strings.Contains(line, `"level":"WARN"`) || !strings.Contains(line, "config import") || !strings.Contains(line, "rate: 11") {
		t.Fatalf("overwrite log:\n%s\nwant a WARN naming config import with the diff", logs.String())
	}
	if got := storedConfig(t, rd.URL()).Config.Tiers["free"].Rate; got != 5 {
		t.Fatalf("store's free rate after reload: %d, want the file's 5", got)
	}
	testenv.WaitFor(t, 10*time.Second, "throttled_config_drift 0", func() bool { return testutil.ToFloat64(s.src.drift) == 0 })
}

// An instance in file mode records itself as the store's owner, which
// CheckImport names; an instance in store mode clears the record.
func TestCheckImportNamesFileOwner(t *testing.T) {
	rd := testenv.StartRedis(t)
	buildLogged(t, withFreeRate(t, rd.URL(), "file", 5))
	err := CheckImport(context.Background(), rd.Client(), "throttled:")
	host, _ := os.Hostname()
	if !errors.Is(err, ErrFileOwned) || !strings.Contains(err.Error(), "config.source: file") || !strings.Contains(err.Error(), host) {
		t.Fatalf("CheckImport: %v, want ErrFileOwned naming config.source: file and instance %s", err, host)
	}
	buildLogged(t, withFreeRate(t, rd.URL(), "store", 5))
	if err := CheckImport(context.Background(), rd.Client(), "throttled:"); err != nil {
		t.Fatalf("CheckImport after a store-mode instance started: %v, want nil", err)
	}
}

// With config.watch the file is reloaded when its content changes behind
// a swapped symlink, as a Kubernetes ConfigMap update does (the mtime of
// the path read does not change), within the 5 s check and a margin.
func TestWatchReloadsSwappedConfigMap(t *testing.T) {
	rd := testenv.StartRedis(t)
	dir := t.TempDir()
	writeVersion := func(name string, rate int) {
		src := strings.Replace(testenv.ServeConfig("", rd.URL()), "free:    { rate: 5,   period: 1m, burst: 5,",
			"free:    { rate: "+itoa(rate)+", period: 1m, burst: "+itoa(rate)+",", 1) + "config:\n  source: file\n  watch: true\n"
		if err := os.MkdirAll(filepath.Join(dir, name), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "throttled.yaml"), []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	writeVersion("..v1", 5)
	path := filepath.Join(dir, "throttled.yaml")
	if err := os.Symlink("..data/throttled.yaml", path); err != nil {
		t.Fatal(err)
	}
	load := func() (*config.Config, error) { return config.LoadEnv(path, nil) }
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	s, logs := runLogged(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.RunReloads(ctx, ReloadSettings{Load: load, Path: path}) }()
	t.Cleanup(func() { cancel(); <-done })
	writeVersion("..v2", 8)
	start := time.Now()
	testenv.WaitFor(t, DefaultWatchInterval+10*time.Second, "the swapped file's rate 8 in the store", func() bool {
		return storedConfig(t, rd.URL()).Config.Tiers["free"].Rate == 8
	})
	t.Logf("applied %v after the swap", time.Since(start))
	if n := strings.Count(logs.String(), "config file changed: reloading"); n != 1 {
		t.Fatalf("%d reloads logged, want 1:\n%s", n, logs.String())
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func get(h http.Handler, path string) int {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code
}

// BeginShutdown makes /readyz answer 503 at once.
func TestBeginShutdownFailsReadyz(t *testing.T) {
	s, err := New(context.Background(), configtest.Serve(t, "", ""), Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h := s.AdminHandler()
	if code := get(h, "/readyz"); code != 200 {
		t.Fatalf("/readyz before shutdown: %d, want 200", code)
	}
	s.BeginShutdown()
	if code := get(h, "/readyz"); code != 503 {
		t.Fatalf("/readyz after BeginShutdown: %d, want 503", code)
	}
}

// A reload while the store does not answer is not applied, says so, and
// config.watch applies the file on a later check once the store is back.
func TestWatchRetriesWhileStoreDown(t *testing.T) {
	rd := testenv.StartRedis(t)
	path := testenv.WriteFile(t, testenv.ServeConfig("", rd.URL())+"config:\n  source: file\n  watch: true\n")
	load := func() (*config.Config, error) { return config.LoadEnv(path, nil) }
	cfg, err := load()
	if err != nil {
		t.Fatal(err)
	}
	s, logs := runLogged(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.RunReloads(ctx, ReloadSettings{Load: load, Path: path, Interval: 200 * time.Millisecond})
	}()
	t.Cleanup(func() { cancel(); <-done })
	rd.Pause()
	src := strings.Replace(testenv.ServeConfig("", rd.URL()), "free:    { rate: 5,", "free:    { rate: 6,", 1)
	if err := os.WriteFile(path, []byte(src+"config:\n  source: file\n  watch: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	testenv.WaitFor(t, 20*time.Second, "the reload to fail on the paused store", func() bool {
		return strings.Contains(logs.String(), "the store does not answer: not applied")
	})
	rd.Resume()
	testenv.WaitFor(t, 20*time.Second, "the file's rate 6 in the store once it answers", func() bool {
		return storedConfig(t, rd.URL()).Config.Tiers["free"].Rate == 6
	})
}
