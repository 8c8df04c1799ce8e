package promserver

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// TestStartScrapesTargetsAndStopCleansUp: the server answers only once
// its target is up (its up series is 1 at once), and Stop ends it and
// removes its directory.
func TestStartScrapesTargetsAndStopCleansUp(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("# TYPE demo_total counter\ndemo_total 3\n"))
	}))
	defer target.Close()
	p, err := Start(context.Background(), "", Settings{Targets: []string{target.URL}})
	if err != nil {
		t.Fatalf("Start: %v (the test needs the Debian prometheus: apt-get install prometheus)", err)
	}
	resp, err := http.Get(p.URL() + "/api/v1/query?query=" + url.QueryEscape(`up{job="throttled"}`))
	if err != nil {
		t.Fatal(err)
	}
	var q struct {
		Data struct {
			Result []struct {
				Value []any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&q)
	resp.Body.Close()
	if err != nil || len(q.Data.Result) != 1 || q.Data.Result[0].Value[1] != "1" {
		t.Fatalf("up after Start = %+v (err %v), want one series at 1", q.Data.Result, err)
	}
	dir := p.dir
	p.Stop()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s after Stop: %v, want it removed", dir, err)
	}
	if _, err := http.Get(p.URL() + "/-/ready"); err == nil {
		t.Errorf("%s still answers after Stop", p.URL())
	}
}

// TestStartFailsOnADownTarget: a target that never comes up fails the
// start within Ready with ErrNotReady, naming the count.
func TestStartFailsOnADownTarget(t *testing.T) {
	dead, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(context.Background(), "", Settings{Targets: []string{dead}, Ready: 3 * time.Second})
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), "0 of 1 targets up") {
		t.Fatalf("Start on a dead target: %v, want ErrNotReady with 0 of 1 targets up", err)
	}
}

// TestStartNeedsTargets names the missing setting.
func TestStartNeedsTargets(t *testing.T) {
	if _, err := Start(context.Background(), "", Settings{}); !errors.Is(err, ErrSettings) || !strings.Contains(err.Error(), "Targets") {
		t.Fatalf("Start without targets: %v, want ErrSettings naming Targets", err)
	}
}

func TestConfig(t *testing.T) {
	got := Config("j", time.Second, []string{"127.0.0.1:1", "127.0.0.1:2"})
	want := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: \"j\"\n    static_configs:\n      - targets: [\"127.0.0.1:1\", \"127.0.0.1:2\"]\n"
	if got != want {
		t.Fatalf("Config =\n%s\nwant\n%s", got, want)
	}
}
