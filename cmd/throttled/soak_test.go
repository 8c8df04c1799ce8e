package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/config/configtest"
	"github.com/throttledhq/throttled/internal/testenv"
)

// soakFor is the soak's length: THROTTLED_SOAK (`make soak`: 5m), else 30 s.
func soakFor(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("THROTTLED_SOAK")
	if v == "" {
		return 30 * time.Second
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		t.Fatalf("THROTTLED_SOAK=%q: %v", v, err)
	}
	return d
}

// soakSample is what must come back to flat after the soak.
type soakSample struct {
	goroutines  int
	heap        uint64 // bytes in use after a GC
	redisConns  int64  // connected_clients
	storeErrors float64
}

func takeSample(t *testing.T, rc *redis.Client, admin string) soakSample {
	t.Helper()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	conns := int64(-1)
	if v, ok := testenv.Info(t, rc, "clients")["connected_clients"]; ok {
		conns, _ = strconv.ParseInt(v, 10, 64)
	}
	_, metrics := testenv.Call(t, "GET", admin+"/metrics", "")
	var errs float64
	for _, l := range strings.Split(testenv.GrepLines(metrics, "throttled_store_errors_total{"), "\n") {
		if f := strings.Fields(l); len(f) == 2 {
			v, _ := strconv.ParseFloat(f[1], 64)
			errs += v
		}
	}
	return soakSample{goroutines: runtime.NumGoroutine(), heap: ms.HeapInuse, redisConns: conns, storeErrors: errs}
}

// TestSoak: steady load through the proxy with a Redis restart in the
// middle. Afterwards goroutines, heap and Redis connections are back to
// where they were (with slack for pools), store errors stopped growing once
// Redis was back, and every request got 200 or 429. 30 s here; `make soak`
// runs 5 minutes.
func TestSoak(t *testing.T) {
	r := testenv.StartRedis(t)
	up := testenv.Upstream(t)
	addrs := startServe(t, configtest.Serve(t, up.URL, r.URL()))
	proxy, admin := "http://"+addrs["proxy"], "http://"+addrs["admin"]
	total := soakFor(t)
	rc := r.Client()
	var sent, bad atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	for w := range 4 {
		wg.Go(func() {
			tick := time.NewTicker(10 * time.Millisecond) // 4 × 100 req/s
			defer tick.Stop()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-tick.C:
				}
				req, _ := http.NewRequest("GET", proxy+"/", nil)
				req.Header.Set("X-API-Key", fmt.Sprintf("soak-%d-%d", w, i%50))
				resp, err := client.Do(req)
				sent.Add(1)
				if err != nil {
					bad.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 && resp.StatusCode != 429 {
					bad.Add(1)
				}
			}
		})
	}
	time.Sleep(total / 6) // warm up: pools filled
	before := takeSample(t, rc, admin)
	time.Sleep(total / 3)
	r.Kill()
	time.Sleep(time.Second)
	r.Start()
	time.Sleep(5 * time.Second) // breaker closes, clients reconnect
	recovered := takeSample(t, rc, admin)
	time.Sleep(total/2 - total/6 - 6*time.Second)
	after := takeSample(t, rc, admin)
	close(stop)
	wg.Wait()
	client.CloseIdleConnections()
	t.Logf("soak %v: %d requests, %d bad; before %+v, recovered %+v, after %+v", total, sent.Load(), bad.Load(),
		before, recovered, after)
	if bad.Load() > 0 {
		t.Errorf("%d of %d requests failed or got a status other than 200/429", bad.Load(), sent.Load())
	}
	if after.storeErrors != recovered.storeErrors {
		t.Errorf("store errors grew after redis was back: %v → %v", recovered.storeErrors, after.storeErrors)
	}
	if after.goroutines > before.goroutines+20 {
		t.Errorf("goroutines %d → %d: leak", before.goroutines, after.goroutines)
	}
	if after.heap > before.heap*3/2+8<<20 {
		t.Errorf("heap in use %d → %d bytes: growth", before.heap, after.heap)
	}
	if after.redisConns > before.redisConns+5 {
		t.Errorf("redis connections %d → %d: leak", before.redisConns, after.redisConns)
	}
}
