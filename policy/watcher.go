package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultPollInterval is how often a Watcher reads the store when no
// notification arrives.
const DefaultPollInterval = time.Second

// WatcherSettings configures a Watcher. Zero fields take the defaults named
// beside them; OnChange is required.
type WatcherSettings struct {
	// Interval is how often the store is polled, besides notifications.
	// Zero means DefaultPollInterval.
	Interval time.Duration
	// OnChange receives each new valid snapshot, first the one found at
	// start. It is called from Run's goroutine, one call at a time.
	OnChange func(Snapshot)
	// OnError is told when the store cannot be read or holds a bad document
	// (wrapping ErrBadStored), once per distinct problem. Nil ignores them.
	OnError func(error)
	// Now is the clock Pins reads. Nil means time.Now.
	Now func() time.Time
}

func (s WatcherSettings) normalize() (WatcherSettings, error) {
	if s.Interval < 0 {
		return s, fmt.Errorf("policy: WatcherSettings.Interval %v must not be negative", s.Interval)
	}
	if s.OnChange == nil {
		return s, errors.New("policy: WatcherSettings.OnChange is required")
	}
	if s.Interval == 0 {
		s.Interval = DefaultPollInterval
	}
	if s.OnError == nil {
		s.OnError = func(error) {}
	}
	if s.Now == nil {
		s.Now = time.Now
	}
	return s, nil
}

// Watcher follows a Store and delivers every new valid configuration to a
// callback: on each notification (Redis pub/sub) and on each poll, so a
// change reaches every instance within the poll interval even when a
// notification is lost. A bad stored document is reported and the last good
// one stays in force. A store that lost its data (ErrStoreReset: empty, or
// older than the configuration in force) is reported and restored from the
// configuration in force, which stays in force meanwhile.
type Watcher struct {
	st Store
	s  WatcherSettings
	l  *loader

	pollMu  sync.Mutex // one poll at a time
	sent    []byte     // canonical JSON of the last delivered snapshot
	lastErr string

	mu  sync.RWMutex
	cur Snapshot
}

// NewWatcher returns a Watcher of st; Run starts it.
func NewWatcher(st Store, s WatcherSettings) (*Watcher, error) {
	if st == nil {
		return nil, errors.New("policy: NewWatcher: nil Store")
	}
	s, err := s.normalize()
	if err != nil {
		return nil, err
	}
	return &Watcher{st: st, s: s, l: &loader{}}, nil
}

// Run polls once, then follows notifications and the poll interval until
// ctx ends, and returns ctx's error.
func (w *Watcher) Run(ctx context.Context) error {
	sub := w.subscribe(ctx)
	w.Poll(ctx)
	t := time.NewTicker(w.s.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sub:
		case <-t.C:
			if sub == nil {
				sub = w.subscribe(ctx)
			}
		}
		w.Poll(ctx)
	}
}

func (w *Watcher) subscribe(ctx context.Context) <-chan struct{} {
	sub, err := w.st.Subscribe(ctx)
	if err != nil {
		w.pollMu.Lock()
		w.report(fmt.Errorf("policy: watcher: %w (polling only)", err))
		w.pollMu.Unlock()
		return nil
	}
	return sub
}

// Poll reads the store once and delivers the snapshot if it changed.
func (w *Watcher) Poll(ctx context.Context) {
	w.pollMu.Lock()
	defer w.pollMu.Unlock()
	snap, raw, err := w.l.load(ctx, w.st)
	if storeLost(err) {
		if _, rerr := restore(ctx, w.st, raw, snap, w.s.Now()); rerr != nil {
			err = errors.Join(err, rerr)
		}
	}
	if err != nil {
		w.report(err)
	} else {
		w.lastErr = ""
	}
	if snap.Version == 0 {
		return
	}
	c := canonical(snap)
	if bytes.Equal(c, w.sent) {
		return
	}
	w.sent = c
	w.mu.Lock()
	w.cur = snap
	w.mu.Unlock()
	w.s.OnChange(snap.clone())
}

// report passes err on unless it repeats the last one; pollMu is held.
func (w *Watcher) report(err error) {
	if msg := err.Error(); msg != w.lastErr {
		w.lastErr = msg
		w.s.OnError(err)
	}
}

// Snapshot returns the configuration in force (Version 0 before the first
// good document).
func (w *Watcher) Snapshot() Snapshot {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.cur.clone()
}

// Pins returns the pins in force now, by tier: what enforcers apply
// instead of the controller's multiplier.
func (w *Watcher) Pins() map[string]Pin {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.cur.ActivePins(w.s.Now())
}
