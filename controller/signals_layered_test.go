package controller

import (
	"context"
	"testing"

	"github.com/throttledhq/throttled/signals"
)

// fixedSource answers the same Signals every read.
type fixedSource struct{ s signals.Signals }

func (f fixedSource) Read(context.Context) (signals.Signals, error) { return f.s, nil }

// TestFromLayeredPutsTheInstanceReadingInFresh: the window's signals stay
// Signals, the instance's become Fresh (the refused fraction with its
// Keep), and the period's admitted rates win over the window's.
func TestFromLayeredPutsTheInstanceReadingInFresh(t *testing.T) {
	slow := fixedSource{signals.Signals{
		Latency:  signals.Value{V: 2, At: t0, Valid: true},
		Admitted: signals.Rates{ByTier: map[string]float64{"free": 50}, At: t0, Valid: true},
	}}
	fresh := fixedSource{signals.Signals{
		Latency:    signals.Value{V: 0.1, At: t0, Valid: true},
		Saturation: signals.Value{V: 0.25, At: t0, Valid: true},
		Admitted:   signals.Rates{ByTier: map[string]float64{"free": 120}, At: t0, Valid: true},
	}}
	targets := map[signals.Kind]float64{signals.Latency: 1, signals.Saturation: 0.5}
	in, err := FromLayered(slow, fresh, targets, signals.Saturation).Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Signals) != 2 || in.Signals[0].Value != 2 || len(in.Fresh) != 2 || in.Fresh[0].Value != 0.1 {
		t.Fatalf("signals %+v fresh %+v: want the window's latency 2 and the instance's 0.1", in.Signals, in.Fresh)
	}
	if k := in.Fresh[1].Keep; k != 0.75 {
		t.Fatalf("fresh saturation keep %v, want 1 − 0.25", k)
	}
	if in.Admitted["free"] != 120 {
		t.Fatalf("admitted %v, want the period's free 120", in.Admitted)
	}
	fresh.s.Admitted = signals.Rates{}
	in, _ = FromLayered(slow, fresh, targets).Read(context.Background())
	if in.Admitted["free"] != 50 {
		t.Fatalf("admitted %v without a valid period's rate, want the window's free 50", in.Admitted)
	}
}
