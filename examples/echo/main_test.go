package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"
)

// start runs the example on free loopback ports with its own
// configuration file and returns the service's base URL.
func start(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan [2]string, 1)
	done := make(chan error, 1)
	args := []string{"--config", "throttled.yaml", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0",
		"--workers", "4", "--work", "20ms"}
	go func() { done <- run(ctx, args, io.Discard, started) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	select {
	case addrs := <-started:
		return "http://" + addrs[0]
	case err := <-done:
		t.Fatalf("run: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("the example did not start within 20 s")
	}
	return ""
}

// answer is what a client saw: the status and the refusal's reason.
type answer struct {
	status int
	reason string
}

func get(c *http.Client, url, key string) answer {
	req, _ := http.NewRequest(http.MethodGet, url+"/api/items", nil)
	req.Header.Set("X-API-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return answer{status: -1, reason: err.Error()}
	}
	defer resp.Body.Close()
	var body struct{ Reason string }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return answer{status: resp.StatusCode, reason: body.Reason}
}

// TestOverQuotaKeyGets429: a free key (5 a second, burst 5) that sends 8
// at once gets 429 over_quota for what passes its burst, with Retry-After.
func TestOverQuotaKeyGets429(t *testing.T) {
	url := start(t)
	var got []int
	for range 8 {
		got = append(got, get(http.DefaultClient, url, "greedy").status)
	}
	n429 := 0
	for _, s := range got {
		if s == http.StatusTooManyRequests {
			n429++
		}
	}
	if got[0] != http.StatusOK || n429 < 2 {
		t.Fatalf("statuses %v: want the burst 200, then 429", got)
	}
	req, _ := http.NewRequest(http.MethodGet, url+"/api/items", nil)
	req.Header.Set("X-API-Key", "greedy")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ra, _ := strconv.Atoi(resp.Header.Get("Retry-After")); resp.StatusCode != 429 || ra < 1 || resp.Header.Get("X-RateLimit-Limit") != "5" {
		t.Fatalf("%d, Retry-After %q, X-RateLimit-Limit %q: want 429, ≥ 1, 5", resp.StatusCode,
			resp.Header.Get("Retry-After"), resp.Header.Get("X-RateLimit-Limit"))
	}
}

// TestSurgeShedsFreeKeepsPremium: the service serves 200 requests a
// second; 60 free keys (4 a second each, within their quota) and two
// premium keys (20 a second each) offer 280. Premium gets through; free
// is shed with 503 (the inner loop and the tier's multiplier), never 429,
// since every free key stays within its quota.
func TestSurgeShedsFreeKeepsPremium(t *testing.T) {
	url := start(t)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 512}, Timeout: 10 * time.Second}
	var mu sync.Mutex
	seen := map[string]map[answer]int{"free": {}, "premium": {}}
	var wg sync.WaitGroup
	send := func(tier, key string, every time.Duration, until time.Time) {
		defer wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for now := time.Now(); now.Before(until); now = <-tick.C {
			wg.Add(1)
			go func() {
				defer wg.Done()
				a := get(c, url, key)
				mu.Lock()
				seen[tier][a]++
				mu.Unlock()
			}()
		}
	}
	until := time.Now().Add(6 * time.Second)
	for i := range 60 {
		wg.Add(1)
		go send("free", fmt.Sprintf("f%d", i), 250*time.Millisecond, until)
	}
	for _, k := range []string{"p1", "p2"} {
		wg.Add(1)
		go send("premium", k, 50*time.Millisecond, until)
	}
	wg.Wait()
	share := func(tier string, a answer) float64 {
		n, all := seen[tier][a], 0
		for _, v := range seen[tier] {
			all += v
		}
		return float64(n) / float64(max(all, 1))
	}
	t.Logf("free %v, premium %v", seen["free"], seen["premium"])
	if p := share("premium", answer{status: 200}); p < 0.95 {
		t.Errorf("premium: %.1f %% answered 200, want ≥ 95 %%: %v", 100*p, seen["premium"])
	}
	if s := share("free", answer{503, "shed"}); s < 0.05 {
		t.Errorf("free: %.1f %% shed with 503, want the surge shed: %v", 100*s, seen["free"])
	}
	for a, n := range seen["free"] {
		if a.status == http.StatusTooManyRequests {
			t.Errorf("free: %d answers 429, but every free key stays within its quota", n)
		}
	}
}
