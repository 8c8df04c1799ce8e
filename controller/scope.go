package controller

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/throttledhq/throttled/limiter/multiplier"
)

// Scope says whose overload a cut answers: the fleet's as one, or each
// instance's own.
type Scope uint8

// The scopes.
const (
	// ScopeFleet (the default): one multiplier per tier for every
	// instance, stepped on the fleet's worst reading: instances that share
	// a backend.
	ScopeFleet Scope = iota
	// ScopeInstance: the leader also steps each enforcing instance on its
	// own reading and publishes its factors where they differ from the
	// fleet's (multiplier.Set.Instances): instances that each have their
	// own backend (a sidecar per pod), where one hot backend must not cut
	// the traffic of the others. The fleet's multipliers stay for
	// instances the leader has not read yet, and the tier-wide rate caps
	// are not set: one bucket for the whole fleet cannot tell a fine
	// instance's requests from a hot one's.
	ScopeInstance
)

// ScopeNames are the scopes' names in the config (controller.scope).
var ScopeNames = []string{"fleet", "instance"}

func (s Scope) String() string {
	if int(s) < len(ScopeNames) {
		return ScopeNames[s]
	}
	return fmt.Sprintf("scope(%d)", uint8(s))
}

// ParseScope reads a scope's name; "" is ScopeFleet.
func ParseScope(name string) (Scope, error) {
	if name == "" {
		return ScopeFleet, nil
	}
	if i := slices.Index(ScopeNames, name); i >= 0 {
		return Scope(i), nil
	}
	return 0, fmt.Errorf("%w: scope %q: want one of %v", ErrInvalidSettings, name, ScopeNames)
}

// InstanceReader is optionally implemented by a Source that reads each
// enforcing instance's own signals as well (FromSignals and FromLayered
// over in-process signals of the fleet's tally): Instances returns those
// of its last Read, by instance id, nil when that Read had none (a failed
// read: the instances' laws hold).
type InstanceReader interface {
	Instances() map[string][]Signal
}

// instanceLaws is the leader's state of every instance it steps on its
// own reading (ScopeInstance). Used only by Run's goroutine.
type instanceLaws struct {
	states map[string]State
	read   time.Time                     // the last tick with a reading
	last   map[string]map[string]float64 // the factors last published
}

// step steps every instance of sigs from its state (a new one from the
// fleet's state before this step, whose multipliers it applied until now),
// drops the instances sigs lacks, and returns each one's factors that
// differ from the fleet's st. A nil sigs holds every state, for at most
// the law's HoldTimeout.
func (il *instanceLaws) step(law *Law, sigs map[string][]Signal, before, st State, cpuWait float64, now time.Time) map[string]map[string]float64 {
	switch {
	case sigs != nil:
		il.read = now
		for id := range il.states {
			if _, ok := sigs[id]; !ok {
				delete(il.states, id) // the instance left the reading: its entry goes
			}
		}
	case now.Sub(il.read) > law.s.HoldTimeout:
		clear(il.states)
	}
	if il.states == nil {
		il.states = map[string]State{}
	}
	for id, s := range sigs {
		cur, ok := il.states[id]
		if !ok {
			cur = before
			cur.Tiers = slices.Clone(before.Tiers)
		}
		il.states[id] = law.Step(cur, Input{Signals: s, CPUWait: cpuWait}, now)
	}
	var out map[string]map[string]float64
	for id, s := range il.states {
		for _, t := range s.Tiers {
			if v, _ := st.Multiplier(t.Name); v == t.Multiplier {
				continue
			}
			if out == nil {
				out = map[string]map[string]float64{}
			}
			if out[id] == nil {
				out[id] = map[string]float64{}
			}
			out[id][t.Name] = t.Multiplier
		}
	}
	return out
}

// changed reports whether own differs from the factors last published,
// and keeps own as those.
func (il *instanceLaws) changed(own map[string]map[string]float64) bool {
	same := len(own) == len(il.last)
	for id, f := range own {
		same = same && maps.Equal(f, il.last[id])
	}
	il.last = own
	return !same
}

// adopt continues each instance that has factors in m (published by a
// previous leader) from the fleet's adopted st with its own factors.
func (il *instanceLaws) adopt(law *Law, st State, m multiplier.Set, now time.Time) {
	il.states, il.last, il.read = map[string]State{}, nil, now
	for id, own := range m.Instances {
		tiers := maps.Clone(m.Tiers)
		maps.Copy(tiers, own)
		il.states[id] = law.Adopt(st, multiplier.Set{Tiers: tiers, Epoch: m.Epoch, At: m.At}, now)
	}
}

// reset forgets every instance (leadership lost).
func (il *instanceLaws) reset() { il.states, il.last = nil, nil }

// count is the number of instances held.
func (il *instanceLaws) count() int { return len(il.states) }
