package bulkhead

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

func benchBulkhead(b *testing.B, s Settings) *Bulkhead {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	bh, err := New("bench", s, m)
	if err != nil {
		b.Fatal(err)
	}
	return bh
}

func BenchmarkTryAcquireRelease(b *testing.B) {
	bh := benchBulkhead(b, Settings{Limit: 1 << 20})
	b.ReportAllocs()
	for b.Loop() {
		p, err := bh.TryAcquire()
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	bh := benchBulkhead(b, Settings{Limit: 1 << 20, MaxQueue: 8})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := bh.Acquire(ctx)
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
}

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	bh := benchBulkhead(b, Settings{Limit: 1 << 20, MaxQueue: 8})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			p, err := bh.Acquire(ctx)
			if err != nil {
				b.Error(err)
				return
			}
			p.Release()
		}
	})
}

// Contended: fewer permits than goroutines, no queue; refusals are counted.
func BenchmarkTryAcquireContendedParallel(b *testing.B) {
	bh := benchBulkhead(b, Settings{Limit: 1})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if p, err := bh.TryAcquire(); err == nil {
				p.Release()
			}
		}
	})
}

func BenchmarkBreakerCall(b *testing.B) {
	br, err := NewBreaker("bench", BreakerSettings{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := br.Call(ctx, ok); err != nil {
			b.Fatal(err)
		}
	}
}

func benchGate(b *testing.B, s GateSettings) *Gate {
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	g, err := NewGate("bench", s, m)
	if err != nil {
		b.Fatal(err)
	}
	return g
}

func BenchmarkGateAcquireRelease(b *testing.B) {
	g := benchGate(b, GateSettings{Limit: 1 << 20})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := g.Acquire(ctx, 1)
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
}

func BenchmarkGateAcquireReleaseParallel(b *testing.B) {
	g := benchGate(b, GateSettings{Limit: 1 << 20})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			p, err := g.Acquire(ctx, 1)
			if err != nil {
				b.Error(err)
				return
			}
			p.Release()
		}
	})
}

// Contended: a limit of 2 for all goroutines, so most calls queue (at
// random priorities) and are granted by a release, or shed.
func BenchmarkGateContendedParallel(b *testing.B) {
	g := benchGate(b, GateSettings{Limit: 2, MaxQueue: 8, MaxWait: time.Millisecond})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		prio := 0
		for pb.Next() {
			prio = (prio + 1) % 4
			if p, err := g.Acquire(ctx, prio); err == nil {
				p.Release()
			}
		}
	})
}
