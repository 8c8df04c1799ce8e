package main

import (
	"context"
	"net"
	"net/http"
	"time"
)

// backend is the demo's protected service: a fixed number of workers, each
// busy for a service time per request. Beyond its capacity requests queue,
// so latency climbs; a request that waits over maxQueueWait gets a 503.
type backend struct {
	srv     *http.Server
	url     string
	workers chan struct{}
	service time.Duration
}

const maxQueueWait = 500 * time.Millisecond

func startBackend(workers int, service time.Duration) (*backend, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	b := &backend{url: "http://" + ln.Addr().String(), workers: make(chan struct{}, workers), service: service}
	b.srv = &http.Server{Handler: http.HandlerFunc(b.serve), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = b.srv.Serve(ln) }()
	return b, nil
}

func (b *backend) serve(w http.ResponseWriter, r *http.Request) {
	t := time.NewTimer(maxQueueWait)
	defer t.Stop()
	select {
	case b.workers <- struct{}{}:
	case <-t.C:
		http.Error(w, "backend overloaded", http.StatusServiceUnavailable)
		return
	case <-r.Context().Done():
		return
	}
	time.Sleep(b.service)
	<-b.workers
	_, _ = w.Write([]byte("ok"))
}

// capacity is the requests per second the workers sustain.
func (b *backend) capacity() int { return int(float64(cap(b.workers)) / b.service.Seconds()) }

func (b *backend) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = b.srv.Shutdown(ctx)
}
