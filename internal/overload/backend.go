package overload

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// BackendSettings configure a Backend. Zero values mean the defaults.
type BackendSettings struct {
	// Workers serve one request at a time each; default 8.
	Workers int
	// ServiceTime is how long a worker spends on a request; default 20 ms.
	ServiceTime time.Duration
	// MaxQueueWait is the longest a request waits for a worker before the
	// backend answers 503 with MarkerHeader; default 500 ms.
	MaxQueueWait time.Duration
	// Addr is the listen address; default "127.0.0.1:0".
	Addr string
}

func (s BackendSettings) withDefaults() BackendSettings {
	if s.Workers <= 0 {
		s.Workers = 8
	}
	if s.ServiceTime <= 0 {
		s.ServiceTime = 20 * time.Millisecond
	}
	if s.MaxQueueWait <= 0 {
		s.MaxQueueWait = 500 * time.Millisecond
	}
	if s.Addr == "" {
		s.Addr = "127.0.0.1:0"
	}
	return s
}

// Capacity is the requests per second the settings sustain: Workers ÷
// ServiceTime (400 with the defaults).
func (s BackendSettings) Capacity() float64 {
	s = s.withDefaults()
	return float64(s.Workers) / s.ServiceTime.Seconds()
}

// BackendCounts are a backend's answers so far.
type BackendCounts struct {
	OK         int64 // 200: served by a worker
	Overloaded int64 // 503 with MarkerHeader: waited over MaxQueueWait
	Abandoned  int64 // the caller went away (or the backend closed) first
}

// Backend is the protected service: Workers workers, each busy for the
// service time per request. Requests beyond capacity queue (first come,
// first served), so latency grows with the queue; a request that waits
// longer than MaxQueueWait gets a 503 with MarkerHeader. Workers sleep
// rather than compute: the backend costs almost no CPU.
type Backend struct {
	cfg     BackendSettings
	srv     *http.Server
	url     string
	workers chan struct{} // a token per busy worker
	service atomic.Int64  // nanoseconds
	closing chan struct{} // closed by Close: ends service and queue waits
	once    sync.Once
	ok      atomic.Int64
	over    atomic.Int64
	gone    atomic.Int64
}

// NewBackend starts a backend listening on s.Addr.
func NewBackend(s BackendSettings) (*Backend, error) {
	s = s.withDefaults()
	ln, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return nil, fmt.Errorf("overload: backend: %w", err)
	}
	b := &Backend{cfg: s, url: "http://" + ln.Addr().String(),
		workers: make(chan struct{}, s.Workers), closing: make(chan struct{})}
	b.service.Store(int64(s.ServiceTime))
	b.srv = &http.Server{Handler: b.Handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = b.srv.Serve(ln) }()
	return b, nil
}

// URL is the backend's base URL ("http://127.0.0.1:port").
func (b *Backend) URL() string { return b.url }

// Handler is the backend's handler, which its listener serves: a caller
// may serve it in process as well (behind a middleware), on the same
// workers, queue and counts.
func (b *Backend) Handler() http.Handler { return http.HandlerFunc(b.serve) }

// ServiceTime is the current service time.
func (b *Backend) ServiceTime() time.Duration { return time.Duration(b.service.Load()) }

// SetServiceTime changes the service time of requests that reach a worker
// from now on.
func (b *Backend) SetServiceTime(d time.Duration) { b.service.Store(int64(max(d, time.Microsecond))) }

// Capacity is the requests per second the workers sustain at the current
// service time.
func (b *Backend) Capacity() float64 {
	return float64(b.cfg.Workers) / b.ServiceTime().Seconds()
}

// Busy is the number of workers serving a request now.
func (b *Backend) Busy() int { return len(b.workers) }

// Counts returns the answers so far.
func (b *Backend) Counts() BackendCounts {
	return BackendCounts{OK: b.ok.Load(), Overloaded: b.over.Load(), Abandoned: b.gone.Load()}
}

func (b *Backend) serve(w http.ResponseWriter, r *http.Request) {
	wait := time.NewTimer(b.cfg.MaxQueueWait)
	defer wait.Stop()
	select {
	case b.workers <- struct{}{}:
	case <-wait.C:
		b.over.Add(1)
		w.Header().Set(MarkerHeader, "1")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"backend overloaded"}` + "\n"))
		return
	case <-r.Context().Done():
		b.gone.Add(1)
		return
	case <-b.closing:
		b.closed(w)
		return
	}
	defer func() { <-b.workers }()
	work := time.NewTimer(b.ServiceTime())
	defer work.Stop()
	select {
	case <-work.C:
	case <-b.closing:
		b.closed(w)
		return
	}
	b.ok.Add(1)
	_, _ = w.Write([]byte("ok\n"))
}

// closed answers a request that Close ended: a 503 without the marker
// (class Other), counted as abandoned.
func (b *Backend) closed(w http.ResponseWriter) {
	b.gone.Add(1)
	w.WriteHeader(http.StatusServiceUnavailable)
}

// Close stops the backend; requests still queued or in service end at
// once, counted as abandoned.
func (b *Backend) Close() error {
	b.once.Do(func() { close(b.closing) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := b.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("overload: backend: %w", err)
	}
	return nil
}
