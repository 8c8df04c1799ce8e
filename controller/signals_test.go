package controller

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/throttledhq/throttled/signals"
)

// partialSource answers a valid latency, a failed error ratio and an error.
type partialSource struct{ at time.Time }

func (p partialSource) Read(context.Context) (signals.Signals, error) {
	return signals.Signals{
		Latency:    signals.Value{V: 2, At: p.at, Valid: true},
		ErrorRatio: signals.Value{V: math.NaN(), At: p.at, Reason: signals.QueryError},
		Saturation: signals.Value{V: 0.5, At: p.at, Valid: true},
		Admitted:   signals.Rates{ByTier: map[string]float64{"free": 120, "premium": 0}, At: p.at, Valid: true},
	}, errors.New("error ratio: query failed")
}

// TestFromSignalsKeepsValidSignals: one failed query does not hide the
// other signals, and only signals with a target reach the law.
func TestFromSignalsKeepsValidSignals(t *testing.T) {
	src := FromSignals(partialSource{at: t0}, map[signals.Kind]float64{signals.Latency: 0.5, signals.ErrorRatio: 0.05})
	in, err := src.Read(context.Background())
	if err != nil {
		t.Fatalf("a partial failure is an error: %v", err)
	}
	if len(in.Signals) != 2 {
		t.Fatalf("signals %+v, want latency and error_ratio (saturation has no target)", in.Signals)
	}
	lat, errs := in.Signals[0], in.Signals[1]
	if lat.Name != "latency" || !lat.Valid || lat.Value != 2 || lat.Target != 0.5 || !lat.At.Equal(t0) {
		t.Fatalf("latency %+v", lat)
	}
	if errs.Name != "error_ratio" || errs.Valid || !math.IsNaN(errs.Value) {
		t.Fatalf("error ratio %+v, want invalid NaN", errs)
	}
	if len(in.Admitted) != 2 || in.Admitted["free"] != 120 || in.Admitted["premium"] != 0 {
		t.Fatalf("admitted %v, want free 120, premium 0", in.Admitted)
	}
	law := mustLaw(t, Settings{Tiers: threeTiers().Tiers})
	st := law.Step(law.Init(t0), in, t0)
	if m, _ := st.Multiplier("free"); m >= 1 {
		t.Fatalf("free at %v: the valid latency (4× its target) was ignored", m)
	}
	if st.Tiers[2].Rate != 60 {
		t.Fatalf("free rate cap %v, want the measured 120 × 0.5", st.Tiers[2].Rate)
	}
}

// rateSource answers fixed admitted rates.
type rateSource struct{ r signals.Rates }

func (s rateSource) Read(context.Context) (signals.Signals, error) {
	return signals.Signals{Admitted: s.r}, nil
}

func TestFromSignalsAdmitted(t *testing.T) {
	by := map[string]float64{"free": 3}
	in, _ := FromSignals(rateSource{signals.Rates{ByTier: by, Valid: true}}, nil).Read(context.Background())
	if len(in.Admitted) != 1 || in.Admitted["free"] != 3 {
		t.Fatalf("admitted %v, want free 3", in.Admitted)
	}
	in.Admitted["free"] = 9
	if by["free"] != 3 {
		t.Fatal("Input.Admitted shares the source's map")
	}
	invalid := signals.Rates{ByTier: by, Reason: signals.Stale}
	if in, _ := FromSignals(rateSource{invalid}, nil).Read(context.Background()); in.Admitted != nil {
		t.Fatalf("invalid rates became %v, want nil", in.Admitted)
	}
}

// A kind named as a refused fraction says how much load to keep: the
// saturation 0.5 of partialSource keeps 0.5; other kinds say nothing.
func TestFromSignalsRefusedFractionKeeps(t *testing.T) {
	targets := map[signals.Kind]float64{signals.Latency: 0.5, signals.Saturation: 0.05}
	in, _ := FromSignals(partialSource{at: t0}, targets, signals.Saturation).Read(context.Background())
	if len(in.Signals) != 2 || in.Signals[0].Keep != 0 || in.Signals[1].Name != "saturation" || in.Signals[1].Keep != 0.5 {
		t.Fatalf("signals %+v, want latency without Keep and saturation keeping 0.5", in.Signals)
	}
	in, _ = FromSignals(partialSource{at: t0}, targets).Read(context.Background())
	if in.Signals[1].Keep != 0 {
		t.Fatalf("saturation not named as refused: Keep %v, want 0", in.Signals[1].Keep)
	}
}
