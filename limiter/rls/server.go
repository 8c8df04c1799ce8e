package rls

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/limiter/enforce"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/reflection"
)

// Defaults of Settings, applied in one place (normalize below).
const (
	DefaultDomain         = "throttled"
	DefaultHealthInterval = time.Second
	DefaultWorkers        = 256
)

// ServiceName is the gRPC service served, also a name the health service
// answers for (besides "", the whole server).
var ServiceName = rlsv3.RateLimitService_ServiceDesc.ServiceName

// ErrBadConfig reports settings that cannot work; the message names them.
var ErrBadConfig = errors.New("rls: bad configuration")

// Checker decides key-based checks; *enforce.Enforcer is one.
type Checker interface {
	CheckKeys(ctx context.Context, qs []enforce.Query, out []enforce.Outcome) (enforce.Result, error)
}

// Settings configure a Server. The zero value serves the domain
// "throttled", always healthy, without reflection.
type Settings struct {
	Domain string // the rate limit domain served; "" means DefaultDomain
	// Ready says whether decisions can be made (the rule of /readyz, e.g.
	// the Redis store's Ready): the health service answers SERVING while it
	// returns nil within ReadyTimeout. Nil means always.
	Ready        func(context.Context) error
	ReadyTimeout time.Duration // 0 means enforce.DefaultReadyTimeout
	// HealthInterval is the time between two readiness probes; 0 means
	// DefaultHealthInterval.
	HealthInterval time.Duration
	// Reflection registers gRPC server reflection (for grpcurl and the
	// like); off by default.
	Reflection bool
	// Requests counts every ShouldRateLimit call once, as the request its
	// gateway answers (instrument.Requests): OK is 200; OVER_LIMIT 429, or
	// 503 when shed; an error by its gRPC code (InvalidArgument 400,
	// NotFound 404, Canceled and DeadlineExceeded 499, Unavailable 503,
	// else 500). Nil: not counted.
	Requests enforce.RequestCounter
	// Workers bounds the long-lived goroutines that decide calls on stacks
	// already grown to a decision's depth (a call whose goroutine's stack
	// must grow first costs more CPU; see workers.go); a call finding them
	// all busy decides on its own goroutine. 0 means DefaultWorkers; -1
	// none: every call decides on the goroutine gRPC gives it.
	Workers int
}

func (s Settings) normalize() (Settings, error) {
	switch {
	case s.ReadyTimeout < 0:
		return s, fmt.Errorf("%w: ReadyTimeout %v must not be negative", ErrBadConfig, s.ReadyTimeout)
	case s.HealthInterval < 0:
		return s, fmt.Errorf("%w: HealthInterval %v must not be negative", ErrBadConfig, s.HealthInterval)
	case s.Workers < -1:
		return s, fmt.Errorf("%w: Workers %d: want -1 (none), 0 (DefaultWorkers) or more", ErrBadConfig, s.Workers)
	}
	if s.Workers == 0 {
		s.Workers = DefaultWorkers
	}
	if s.Domain == "" {
		s.Domain = DefaultDomain
	}
	if s.ReadyTimeout == 0 {
		s.ReadyTimeout = enforce.DefaultReadyTimeout
	}
	if s.HealthInterval == 0 {
		s.HealthInterval = DefaultHealthInterval
	}
	if s.Ready == nil {
		s.Ready = func(context.Context) error { return nil }
	}
	return s, nil
}

// Server is the gRPC rate limit service with its health service. Serve it
// once; Shutdown ends it.
//
// Lock rules: mu guards stopped; the health server and the gRPC server
// have their own locks.
type Server struct {
	check   Checker
	set     Settings
	grpc    *grpc.Server
	health  *health.Server
	answers *prometheus.CounterVec
	work    *workers // nil: Workers -1

	mu      sync.Mutex
	stopped chan struct{} // closed by Shutdown: the readiness prober ends
	closed  bool
}

// New returns a Server deciding through c. If reg is not nil it registers
// throttled_rls_requests_total.
func New(c Checker, s Settings, reg prometheus.Registerer) (*Server, error) {
	if c == nil {
		return nil, fmt.Errorf("%w: New: checker is nil", ErrBadConfig)
	}
	s, err := s.normalize()
	if err != nil {
		return nil, err
	}
	srv := &Server{check: c, set: s, grpc: grpc.NewServer(grpc.ForceServerCodecV2(newCodec())), health: health.NewServer(),
		stopped: make(chan struct{}), answers: newAnswers()}
	if reg != nil {
		if err := reg.Register(srv.answers); err != nil {
			return nil, err
		}
	}
	for _, name := range []string{"", ServiceName} {
		srv.health.SetServingStatus(name, healthpb.HealthCheckResponse_NOT_SERVING) // until the first probe
	}
	if s.Workers > 0 {
		srv.work = newWorkers(srv, s.Workers)
	}
	rlsv3.RegisterRateLimitServiceServer(srv.grpc, service{s: srv})
	healthpb.RegisterHealthServer(srv.grpc, srv.health)
	if s.Reflection {
		reflection.Register(srv.grpc)
	}
	return srv, nil
}

// service is a Server as the generated service interface.
type service struct {
	rlsv3.UnimplementedRateLimitServiceServer
	s *Server
}

func (v service) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	return v.s.ShouldRateLimit(ctx, req)
}

// Serve answers on ln until Shutdown (then it returns nil) or until ln
// fails. It probes readiness every HealthInterval meanwhile.
func (s *Server) Serve(ln net.Listener) error {
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() { defer wg.Done(); s.probeLoop(done) }()
	err := s.grpc.Serve(ln)
	close(done)
	wg.Wait()
	return err
}

// Shutdown stops answering: the health service turns NOT_SERVING, no new
// call is accepted and the calls in flight finish; when ctx ends first
// they are cut off. It returns ctx's error then, else nil.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.stopped)
	}
	s.mu.Unlock()
	if s.work != nil {
		defer s.work.stop() // after the calls in flight: they may still hand jobs over
	}
	s.health.Shutdown()
	drained := make(chan struct{})
	go func() { s.grpc.GracefulStop(); close(drained) }()
	select {
	case <-drained:
		return nil
	case <-ctx.Done():
		s.grpc.Stop()
		<-drained
		return ctx.Err()
	}
}

// probeLoop sets the health status from Ready now and every
// HealthInterval until done or Shutdown.
func (s *Server) probeLoop(done <-chan struct{}) {
	tick := time.NewTicker(s.set.HealthInterval)
	defer tick.Stop()
	for {
		s.probe()
		select {
		case <-done:
			return
		case <-s.stopped:
			return
		case <-tick.C:
		}
	}
}

func (s *Server) probe() {
	st := healthpb.HealthCheckResponse_SERVING
	if enforce.Probe(context.Background(), s.set.Ready, s.set.ReadyTimeout) != nil {
		st = healthpb.HealthCheckResponse_NOT_SERVING
	}
	for _, name := range []string{"", ServiceName} {
		s.health.SetServingStatus(name, st) // ignored after Shutdown
	}
}

// Answer codes counted in throttled_rls_requests_total besides the gRPC
// error codes.
const (
	answerOK        = "OK"
	answerOverLimit = "OVER_LIMIT"
)

func newAnswers() *prometheus.CounterVec {
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "throttled_rls_requests_total",
		Help: "ShouldRateLimit calls by answer: OK, OVER_LIMIT or the gRPC error code."}, []string{"code"})
	v.WithLabelValues(answerOK)
	v.WithLabelValues(answerOverLimit)
	return v
}
