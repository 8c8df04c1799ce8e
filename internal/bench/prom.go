package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/throttledhq/throttled/internal/overload"
	"github.com/throttledhq/throttled/internal/promserver"
)

// promStack is a Stack whose instances read their signals from a
// prometheus of the bench's own, scraping every instance's /metrics each
// second; Close stops both.
type promStack struct {
	*Stack
	prom *promserver.Server
}

// startWithPrometheus reserves a loopback port for a prometheus, starts
// the stack configured to query it, then the prometheus scraping the
// stack's admin listeners, and returns once every instance is scraped.
func (p Parts) startWithPrometheus(ctx context.Context, spec overload.StackSpec) (overload.Stack, error) {
	addr, err := promserver.FreeAddr()
	if err != nil {
		return nil, fmt.Errorf("bench overload: --prometheus: %w", err)
	}
	p.PrometheusURL = "http://" + addr
	st, err := StartStack(ctx, spec, p)
	if err != nil {
		return nil, err
	}
	prom, err := promserver.Start(ctx, addr, promserver.Settings{Targets: st.Admins()})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("bench overload: --prometheus: %w", err), st.Close())
	}
	return &promStack{Stack: st, prom: prom}, nil
}

// Close stops the instances, then the prometheus.
func (s *promStack) Close() error {
	err := s.Stack.Close()
	s.prom.Stop()
	return err
}
