package overload

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"sync"
	"testing"
	"time"
)

func startBackend(t *testing.T, s BackendSettings) *Backend {
	t.Helper()
	b, err := NewBackend(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

func get(t *testing.T, url string) (*http.Response, time.Duration) {
	t.Helper()
	t0 := time.Now()
	resp, err := http.Get(url)
	if err != nil {
		t.Error(err)
		return nil, 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, time.Since(t0)
}

func TestBackendCapacityFollowsServiceTime(t *testing.T) {
	b := startBackend(t, BackendSettings{})
	if c := b.Capacity(); c != 400 {
		t.Fatalf("default capacity %v, want 400 (8 workers × 20 ms)", c)
	}
	if c := (BackendSettings{}).Capacity(); c != 400 {
		t.Fatalf("settings' capacity %v, want 400", c)
	}
	b.SetServiceTime(40 * time.Millisecond)
	if c := b.Capacity(); c != 200 {
		t.Fatalf("capacity at 40 ms %v, want 200", c)
	}
}

// With one worker, the i-th of n simultaneous requests waits for the i-1
// before it: its latency is at least i service times.
func TestBackendLatencyGrowsWithQueue(t *testing.T) {
	const service = 30 * time.Millisecond
	b := startBackend(t, BackendSettings{Workers: 1, ServiceTime: service, MaxQueueWait: 10 * time.Second})
	const n = 4
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if resp, d := get(t, b.URL()); resp != nil && resp.StatusCode == 200 {
				lat[i] = d
			}
		}()
	}
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	for i, d := range lat {
		if d < time.Duration(i+1)*service {
			t.Fatalf("request %d answered 200 after %v, want ≥ %v (latencies %v)", i+1, d, time.Duration(i+1)*service, lat)
		}
	}
	if c := b.Counts(); c.OK != n {
		t.Fatalf("counts %+v, want %d OK", c, n)
	}
}

// A request that cannot get a worker within MaxQueueWait gets the
// backend's own 503, with the marker, classified as Backend503.
func TestBackendOverloadedAnswerCarriesMarker(t *testing.T) {
	b := startBackend(t, BackendSettings{Workers: 1, ServiceTime: time.Hour, MaxQueueWait: 10 * time.Millisecond})
	go func() { _, _ = http.Get(b.URL()) }() // holds the only worker until Close
	for b.Busy() == 0 {
		time.Sleep(time.Millisecond)
	}
	resp, err := http.Get(b.URL())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get(MarkerHeader) != "1" {
		t.Fatalf("got %d with %s=%q, want 503 with the marker", resp.StatusCode, MarkerHeader, resp.Header.Get(MarkerHeader))
	}
	if cl := Classify(resp.StatusCode, resp.Header, body); cl != Backend503 {
		t.Fatalf("classified %v, want backend_503", cl)
	}
	if c := b.Counts(); c.Overloaded != 1 || c.OK != 0 {
		t.Fatalf("counts %+v, want 1 overloaded, 0 OK", c)
	}
}

// Handler serves the backend in process on the same workers and counts:
// a request through it waits for the one worker its listener's request
// holds, and both are counted.
func TestBackendHandlerSharesWorkers(t *testing.T) {
	const service = 30 * time.Millisecond
	b := startBackend(t, BackendSettings{Workers: 1, ServiceTime: service, MaxQueueWait: 10 * time.Second})
	done := make(chan struct{})
	go func() { defer close(done); get(t, b.URL()) }()
	for b.Busy() == 0 {
		time.Sleep(time.Millisecond)
	}
	rec := httptest.NewRecorder()
	t0 := time.Now()
	b.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if d := time.Since(t0); rec.Code != 200 || d < service/2 {
		t.Fatalf("in process: %d after %v, want 200 after the listener's request left the worker", rec.Code, d)
	}
	<-done
	if c := b.Counts(); c.OK != 2 {
		t.Fatalf("counts %+v, want 2 OK", c)
	}
}
