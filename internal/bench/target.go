package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// target is one mode's server on loopback and the client loading it.
type target struct {
	srv    *http.Server
	tr     *http.Transport
	c      *http.Client
	url    string
	labels pprof.LabelSet
}

// startTarget serves h; the server's and the client's goroutines carry
// the profiler label mode=m (--cpuprofile: go tool pprof -tagfocus mode=M).
func startTarget(h http.Handler, m string, conns int) (*target, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("bench http: mode %s: %w", m, err)
	}
	t := &target{srv: &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second},
		tr: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}, url: "http://" + ln.Addr().String() + "/hello"}
	t.c = &http.Client{Transport: t.tr, Timeout: 10 * time.Second}
	t.labels = pprof.Labels("mode", m)
	pprof.Do(context.Background(), t.labels, func(context.Context) {
		go t.srv.Serve(ln) //nolint:errcheck // ends with Close
	})
	return t, nil
}

func (t *target) close() {
	if t != nil {
		t.tr.CloseIdleConnections()
		_ = t.srv.Close()
	}
}

func (t *target) loop(conns, keys int, dur time.Duration, rate float64) (lat []time.Duration, errs int64) {
	pprof.Do(context.Background(), t.labels, func(context.Context) {
		lat, errs = load(t.c, t.url, conns, keys, dur, rate)
	})
	return lat, errs
}

// load sends requests from conns goroutines for dur: back to back
// (rate 0), or each on its schedule at rate requests/s in all, latency
// counted from the scheduled time (no coordinated omission).
func load(c *http.Client, url string, conns, keys int, dur time.Duration, rate float64) ([]time.Duration, int64) {
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	var errs atomic.Int64
	lat := make([][]time.Duration, conns)
	var wg sync.WaitGroup
	start := time.Now()
	for g := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gap := time.Duration(0)
			if rate > 0 {
				gap = time.Duration(float64(conns) / rate * float64(time.Second))
			}
			at := start.Add(gap * time.Duration(g) / time.Duration(conns))
			for i := g; ctx.Err() == nil; i += conns {
				if rate > 0 {
					if d := time.Until(at); d > 0 {
						time.Sleep(d)
					}
				} else {
					at = time.Now()
				}
				if !getOK(c, url, "k"+strconv.Itoa(i%keys)) {
					errs.Add(1)
				} else if ctx.Err() == nil {
					lat[g] = append(lat[g], time.Since(at))
				}
				at = at.Add(gap)
			}
		}()
	}
	wg.Wait()
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	return all, errs.Load()
}

// StartCPUProfile profiles the process (server and load generator) into
// file until stop.
func StartCPUProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// getOK sends one GET as API key key and reports whether it got a 200.
func getOK(c *http.Client, url, key string) bool {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	req.Header.Set("X-API-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
