package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ExactResult is what `throttled bench rls --exactness N --json` prints:
// N calls on one fresh key, at random times in a span straddling a second
// boundary, spread over the addresses in turn, and how many were let
// through. A limit L per second with a burst of L admits at most
// L + L×span_s (limit + refill), besides answers an instance decided
// alone (FallbackOK); a fixed window of a second admits up to 2L, L on
// each side of the boundary.
type ExactResult struct {
	Key       string  `json:"key"`
	Fired     int     `json:"fired"`
	SpanMs    float64 `json:"span_ms"` // from the first call sent to the last answer
	OK        int64   `json:"ok"`
	OverLimit int64   `json:"over_limit"`
	Errors    int64   `json:"errors"`
	// FallbackOK are the ok answers throttled marked fallback: decided by
	// an instance alone while the store was slow or down, outside the
	// shared bucket's bound.
	FallbackOK int64 `json:"fallback_ok"`
}

// RLSExact fires n calls at one fresh key (the descriptor's "{id}" is
// "exact-<unix ns>") at uniform random times within span, centred on a
// whole second, caller i asking address i % len(spec.Addrs).
func RLSExact(spec RLSSpec, n int, span time.Duration) (ExactResult, error) {
	if len(spec.Addrs) == 0 || n < 1 || span <= 0 || len(spec.Descriptor) == 0 {
		return ExactResult{}, fmt.Errorf("bench: rls: want an address, a descriptor, calls and a span")
	}
	clients, closeAll, err := dialRLS(spec.Addrs)
	if err != nil {
		return ExactResult{}, err
	}
	defer closeAll()
	for _, c := range clients { // connect before the timed calls
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		_, _ = c.ShouldRateLimit(ctx, spec.request(fmt.Sprintf("warm-%d", time.Now().UnixNano())))
		cancel()
	}
	key := fmt.Sprintf("exact-%d", time.Now().UnixNano())
	req := spec.request(key)
	// the first whole second that leaves half the span (and 100 ms) ahead
	boundary := time.Now().Add(span/2 + 100*time.Millisecond).Truncate(time.Second).Add(time.Second)
	from := boundary.Add(-span / 2)
	l := &rlsLoad{}
	var wg sync.WaitGroup
	var mu sync.Mutex
	last := from
	for i := range n {
		at := from.Add(time.Duration(rand.Int64N(int64(span))))
		c := clients[i%len(clients)]
		wg.Go(func() {
			time.Sleep(time.Until(at))
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			r, err := c.ShouldRateLimit(ctx, req)
			l.count(r, err)
			mu.Lock()
			if now := time.Now(); now.After(last) {
				last = now
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return ExactResult{Key: key, Fired: n, SpanMs: float64(last.Sub(from)) / float64(time.Millisecond),
		OK: l.ok.Load(), OverLimit: l.over.Load(), Errors: l.errs.Load(),
		FallbackOK: l.fallbackOK.Load()}, nil
}

// clockTicks is the unit of utime and stime in /proc/<pid>/stat (USER_HZ,
// 100 on Linux whatever the kernel's HZ).
const clockTicks = 100

// procCPU is the user and system CPU the processes pids have used so far
// (/proc/<pid>/stat utime + stime, summed).
func procCPU(pids []int) (time.Duration, error) {
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return 0, fmt.Errorf("bench: --pids: %w", err)
		}
		// fields after the command name, which may hold spaces: state is
		// field 3 of proc(5), utime 14, stime 15
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if i < 0 || len(f) < 13 {
			return 0, fmt.Errorf("bench: --pids: /proc/%d/stat: unexpected format", pid)
		}
		for _, s := range f[11:13] {
			t, err := strconv.ParseInt(s, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bench: --pids: /proc/%d/stat: %w", pid, err)
			}
			ticks += t
		}
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
