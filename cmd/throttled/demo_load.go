package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// demoTier is one class of simulated clients.
type demoTier struct {
	name string
	keys int
	// rate gives the offered requests per second at progress p in [0, 1].
	rate func(p float64) float64
}

// The load: premium steady at half the backend's capacity; free light,
// then a surge to overload in the middle of the run, then light again; and
// one greedy free client above its quota the whole time (429s).
var demoTiers = []demoTier{
	{"premium", 5, func(float64) float64 { return 200 }},
	{"free", 25, func(p float64) float64 {
		if p >= 0.2 && p < 0.65 {
			return 500
		}
		return 100
	}},
	{"greedy", 1, func(float64) float64 { return 70 }},
}

// window counts one refresh interval of one tier.
type window struct {
	sent, ok, over, shed, other, dropped atomic.Int64
	mu                                   sync.Mutex
	lat                                  []time.Duration // of 2xx answers
}

func (w *window) observe(code int, d time.Duration) {
	switch {
	case code/100 == 2:
		w.ok.Add(1)
		w.mu.Lock()
		w.lat = append(w.lat, d)
		w.mu.Unlock()
	case code == http.StatusTooManyRequests:
		w.over.Add(1)
	case code == http.StatusServiceUnavailable:
		w.shed.Add(1)
	default:
		w.other.Add(1)
	}
}

func (w *window) p99() time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.lat) == 0 {
		return 0
	}
	sort.Slice(w.lat, func(i, j int) bool { return w.lat[i] < w.lat[j] })
	return w.lat[(len(w.lat)*99)/100]
}

// loadGen sends open-loop traffic: requests go out on schedule whatever the
// answers, as real clients do, with at most maxInFlight outstanding.
type loadGen struct {
	target   string
	duration time.Duration
	client   *http.Client
	inflight atomic.Int64
	mu       sync.Mutex // guards cur and total
	cur      map[string]*window
	total    map[string]*window
}

const maxInFlight = 2000

func newLoadGen(target string, d time.Duration) *loadGen {
	tr := &http.Transport{MaxIdleConns: 1024, MaxIdleConnsPerHost: 1024, IdleConnTimeout: 30 * time.Second}
	g := &loadGen{target: target, duration: d, client: &http.Client{Transport: tr, Timeout: 10 * time.Second},
		cur: map[string]*window{}, total: map[string]*window{}}
	for _, t := range demoTiers {
		g.cur[t.name], g.total[t.name] = &window{}, &window{}
	}
	return g
}

// swap returns the current windows and starts new ones.
func (g *loadGen) swap() map[string]*window {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.cur
	g.cur = map[string]*window{}
	for _, t := range demoTiers {
		g.cur[t.name] = &window{}
	}
	return old
}

func (g *loadGen) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, t := range demoTiers {
		wg.Add(1)
		go func() { defer wg.Done(); g.drive(ctx, t) }()
	}
	wg.Wait()
	for g.inflight.Load() > 0 {
		time.Sleep(10 * time.Millisecond)
	}
}

// drive sends tier t's requests in 10 ms slices, keys round-robin.
func (g *loadGen) drive(ctx context.Context, t demoTier) {
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var due float64
	next := 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			p := now.Sub(start).Seconds() / g.duration.Seconds()
			due += t.rate(p) * 0.01
			for ; due >= 1; due-- {
				key := fmt.Sprintf("%s-%d", t.name, next%t.keys)
				next++
				g.send(ctx, t.name, key)
			}
		}
	}
}

func (g *loadGen) send(ctx context.Context, tier, key string) {
	g.mu.Lock()
	cur, total := g.cur[tier], g.total[tier]
	g.mu.Unlock()
	cur.sent.Add(1)
	total.sent.Add(1)
	if g.inflight.Load() >= maxInFlight {
		cur.dropped.Add(1)
		total.dropped.Add(1)
		return
	}
	g.inflight.Add(1)
	go func() {
		defer g.inflight.Add(-1)
		req, _ := http.NewRequestWithContext(context.WithoutCancel(ctx), "GET", g.target+"/", nil)
		req.Header.Set("X-API-Key", key)
		start := time.Now()
		code := 0
		if resp, err := g.client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			code = resp.StatusCode
		}
		d := time.Since(start)
		cur.observe(code, d)
		total.observe(code, d)
	}()
}
