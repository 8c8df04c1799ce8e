package bulkhead

import (
	"errors"
	"sort"
	"sync"
)

// registry is a concurrent get-or-create map of named values.
type registry[T any] struct {
	mu   sync.RWMutex
	m    map[string]T
	make func(name string) (T, error)
}

func (r *registry[T]) get(name string) (T, error) {
	r.mu.RLock()
	v, ok := r.m[name]
	r.mu.RUnlock()
	if ok {
		return v, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if v, ok := r.m[name]; ok {
		return v, nil
	}
	v, err := r.make(name)
	if err != nil {
		return v, err
	}
	if r.m == nil {
		r.m = map[string]T{}
	}
	r.m[name] = v
	return v, nil
}

func (r *registry[T]) all() []T {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]T, len(names))
	for i, n := range names {
		out[i] = r.m[n]
	}
	return out
}

// Set holds named bulkheads (one per tier or route: the caller names them),
// created on first use with the Set's default Settings.
type Set struct {
	r registry[*Bulkhead]
}

// NewSet returns an empty Set whose bulkheads take def and report to m (nil
// for no metrics).
func NewSet(def Settings, m *Metrics) (*Set, error) {
	if _, err := def.normalize(); err != nil {
		return nil, err
	}
	s := &Set{}
	s.r.make = func(name string) (*Bulkhead, error) { return New(name, def, m) }
	return s, nil
}

// Get returns the bulkhead named name, creating it if needed.
func (s *Set) Get(name string) (*Bulkhead, error) {
	if name == "" {
		return nil, errors.New("bulkhead: Set.Get: name must not be empty")
	}
	return s.r.get(name)
}

// Resize sets the limit of the bulkhead named name, creating it if needed.
func (s *Set) Resize(name string, limit int) error {
	b, err := s.Get(name)
	if err != nil {
		return err
	}
	return b.Resize(limit)
}

// Stats returns a snapshot of every bulkhead, sorted by name.
func (s *Set) Stats() []Stats {
	all := s.r.all()
	out := make([]Stats, len(all))
	for i, b := range all {
		out[i] = b.Stats()
	}
	return out
}

// BreakerSet holds named breakers (the store's, or one per upstream route),
// created on first use with the set's default BreakerSettings.
type BreakerSet struct {
	r registry[*Breaker]
}

// NewBreakerSet returns an empty BreakerSet whose breakers take def and
// report to m (nil for no metrics).
func NewBreakerSet(def BreakerSettings, m *Metrics) (*BreakerSet, error) {
	if _, err := def.normalize(); err != nil {
		return nil, err
	}
	s := &BreakerSet{}
	s.r.make = func(name string) (*Breaker, error) { return NewBreaker(name, def, m) }
	return s, nil
}

// Get returns the breaker named name, creating it if needed.
func (s *BreakerSet) Get(name string) (*Breaker, error) {
	if name == "" {
		return nil, errors.New("bulkhead: BreakerSet.Get: name must not be empty")
	}
	return s.r.get(name)
}

// States returns every breaker's state by name.
func (s *BreakerSet) States() map[string]State {
	out := map[string]State{}
	for _, b := range s.r.all() {
		out[b.name] = b.State()
	}
	return out
}
