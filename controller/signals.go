package controller

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/throttledhq/throttled/signals"
)

// FromSignals adapts a signals.Source to the loop: each signal that has a
// target becomes a Signal named after its kind ("latency", "error_ratio",
// "saturation"). Validity travels with each value, so a read that failed
// for one signal is not an error: the law still sees the others, and holds
// on the invalid ones. (The source's metrics record why a value failed.)
// Valid admitted rates become Input.Admitted (a copy); invalid ones leave
// it nil, every tier's rate unknown.
//
// refused names the kinds whose value is the fraction s of the load that
// was refused (the inner loop's saturation, throttled_concurrency_saturation):
// their Signal says Keep = 1 − s, so a cut sheds just the excess.
//
// An in-process source measures this process, so Input.CPUWait then says
// how much shorter of CPU it is than usual (signals.CPUWait: the fraction
// less its Usual).
func FromSignals(src signals.Source, targets map[signals.Kind]float64, refused ...signals.Kind) Source {
	ss := signalSource{src: src, targets: targets, refused: refused, inst: &instanceCache{}}
	if _, ok := src.(*signals.InProcess); ok {
		ss.cpu = signals.NewCPUWait()
	}
	return ss
}

// FromLayered is FromSignals over two sources: slow reads through windows
// (a Prometheus), fresh is the instance's own over the last period (the
// in-process source of its registry). slow's signals become Input.Signals,
// fresh's Input.Fresh, which the law prefers while one is usable (see
// [Law.Step]). The admitted rates are fresh's when valid (a period's
// window, not a lagging one), else slow's, and Input.CPUWait is this
// process's above its usual (signals.CPUWait). Both are read at once.
func FromLayered(slow, fresh signals.Source, targets map[signals.Kind]float64, refused ...signals.Kind) Source {
	return layeredSource{slow: signalSource{src: slow, targets: targets, refused: refused},
		fresh: signalSource{src: fresh, targets: targets, refused: refused, cpu: signals.NewCPUWait(), inst: &instanceCache{}}}
}

type signalSource struct {
	src     signals.Source
	targets map[signals.Kind]float64
	refused []signals.Kind
	cpu     *signals.CPUWait // nil: src does not measure this process
	inst    *instanceCache   // each instance's saturation of the last Read; nil: not kept
}

// instanceCache holds the per-instance signals of a source's last Read.
type instanceCache struct {
	mu sync.Mutex
	m  map[string][]Signal
}

// Instances implements InstanceReader: each instance's saturation
// (signals.Signals.SaturationByInstance) as a Signal like the fleet's.
func (s signalSource) Instances() map[string][]Signal {
	if s.inst == nil {
		return nil
	}
	s.inst.mu.Lock()
	defer s.inst.mu.Unlock()
	return s.inst.m
}

// Instances implements InstanceReader with the fresh (in-process) source's.
func (s layeredSource) Instances() map[string][]Signal { return s.fresh.Instances() }

// signal is v as the Signal of kind k with target.
func (s signalSource) signal(k signals.Kind, v signals.Value, target float64) Signal {
	sg := Signal{Name: k.String(), Value: v.V, Target: target, Valid: v.Valid, At: v.At}
	if slices.Contains(s.refused, k) && v.V >= 0 && v.V < 1 {
		sg.Keep = 1 - v.V
	}
	return sg
}

// keepInstances stores each instance's saturation of sig for Instances;
// nil when sig has none or saturation has no target.
func (s signalSource) keepInstances(sig signals.Signals) {
	if s.inst == nil {
		return // the slow layer of FromLayered: its instances are not the tally's
	}
	var m map[string][]Signal
	if target, ok := s.targets[signals.Saturation]; ok && sig.SaturationByInstance != nil {
		m = make(map[string][]Signal, len(sig.SaturationByInstance))
		for id, v := range sig.SaturationByInstance {
			m[id] = []Signal{s.signal(signals.Saturation, v, target)}
		}
	}
	s.inst.mu.Lock()
	s.inst.m = m
	s.inst.mu.Unlock()
}

func (s signalSource) Read(ctx context.Context) (Input, error) {
	sig, _ := s.src.Read(ctx) // every Value says whether it is valid
	var in Input
	for _, k := range signals.Kinds() {
		target, ok := s.targets[k]
		if !ok {
			continue
		}
		in.Signals = append(in.Signals, s.signal(k, sig.Get(k), target))
	}
	s.keepInstances(sig)
	if sig.Admitted.Valid {
		in.Admitted = maps.Clone(sig.Admitted.ByTier)
	}
	if s.cpu != nil {
		if v := s.cpu.Read(); v.Valid {
			in.CPUWait = max(0, v.V-s.cpu.Usual())
		}
	}
	return in, nil
}

type layeredSource struct{ slow, fresh signalSource }

func (s layeredSource) Read(ctx context.Context) (Input, error) {
	var fresh Input
	done := make(chan struct{})
	go func() { defer close(done); fresh, _ = s.fresh.Read(ctx) }()
	in, _ := s.slow.Read(ctx)
	<-done
	in.Fresh, in.CPUWait = fresh.Signals, fresh.CPUWait
	if fresh.Admitted != nil {
		in.Admitted = fresh.Admitted
	}
	return in, nil
}
