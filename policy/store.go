package policy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// ErrBadStored reports a stored document that does not decode or fails
// validation; the last good document is used instead.
var ErrBadStored = errors.New("policy: stored config is invalid")

// DefaultAuditLimit is how many audit entries a store keeps by default.
const DefaultAuditLimit = 1000

// Store keeps the configuration document (a Snapshot as JSON), a copy of
// the last good document, and a bounded audit log. RedisStore shares them
// between instances; MemoryStore keeps them in the process with the same
// semantics. Implementations are safe for concurrent use.
type Store interface {
	// Get returns the current document and the last good copy, each nil
	// when absent.
	Get(ctx context.Context) (current, lastGood []byte, err error)
	// Swap atomically replaces the current document with next if it still
	// equals old (nil: absent), makes next the last good copy, pushes
	// entry onto the audit log (dropping the oldest beyond the limit) and
	// notifies subscribers. It reports whether it swapped.
	Swap(ctx context.Context, old, next, entry []byte) (bool, error)
	// Audit returns up to n audit entries, newest first.
	Audit(ctx context.Context, n int) ([][]byte, error)
	// Subscribe delivers a notification after writes until ctx ends. It is
	// best effort (notifications may coalesce or, over a network, be lost):
	// watchers poll too.
	Subscribe(ctx context.Context) (<-chan struct{}, error)
}

// StoreSettings configures NewRedisStore and NewMemoryStore. The zero value
// is ready to use.
type StoreSettings struct {
	// Prefix starts every Redis key and the channel name. Empty means
	// DefaultPrefix. Ignored by MemoryStore.
	Prefix string
	// AuditLimit is how many audit entries are kept. Zero means
	// DefaultAuditLimit.
	AuditLimit int
}

// DefaultPrefix is the default StoreSettings.Prefix.
const DefaultPrefix = "throttled:"

func (s StoreSettings) normalize() (StoreSettings, error) {
	if s.AuditLimit < 0 {
		return s, fmt.Errorf("policy: StoreSettings.AuditLimit %d must not be negative", s.AuditLimit)
	}
	if s.AuditLimit == 0 {
		s.AuditLimit = DefaultAuditLimit
	}
	if s.Prefix == "" {
		s.Prefix = DefaultPrefix
	}
	return s, nil
}

// MemoryStore is a Store held in the process: the embedded default when
// there is no Redis.
type MemoryStore struct {
	mu       sync.Mutex
	current  []byte
	lastGood []byte
	audit    [][]byte // newest first
	limit    int
	subs     map[chan struct{}]struct{}
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore(s StoreSettings) (*MemoryStore, error) {
	s, err := s.normalize()
	if err != nil {
		return nil, err
	}
	return &MemoryStore{limit: s.AuditLimit, subs: map[chan struct{}]struct{}{}}, nil
}

// Get implements Store.
func (m *MemoryStore) Get(context.Context) (current, lastGood []byte, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return clone(m.current), clone(m.lastGood), nil
}

// Swap implements Store.
func (m *MemoryStore) Swap(_ context.Context, old, next, entry []byte) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if (old == nil) != (m.current == nil) || !bytes.Equal(old, m.current) {
		return false, nil
	}
	m.current, m.lastGood = clone(next), clone(next)
	m.audit = append([][]byte{clone(entry)}, m.audit...)
	if len(m.audit) > m.limit {
		m.audit = m.audit[:m.limit]
	}
	m.notify()
	return true, nil
}

// put replaces the current document without any check, as an operator
// writing the key by hand would (tests use it).
func (m *MemoryStore) put(raw []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.current = clone(raw)
	m.notify()
}

func (m *MemoryStore) notify() {
	for ch := range m.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// Audit implements Store.
func (m *MemoryStore) Audit(_ context.Context, n int) ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n = min(max(n, 0), len(m.audit))
	out := make([][]byte, n)
	for i := range out {
		out[i] = clone(m.audit[i])
	}
	return out, nil
}

// Subscribe implements Store.
func (m *MemoryStore) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.subs[ch] = struct{}{}
	m.mu.Unlock()
	go func() {
		<-ctx.Done()
		m.mu.Lock()
		delete(m.subs, ch)
		m.mu.Unlock()
	}()
	return ch, nil
}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// Load reads the configuration from st: the current document when it
// decodes and validates (ValidateConfig and the pins), else the last good
// copy together with an error wrapping ErrBadStored that says what is
// wrong. An empty store gives a zero Snapshot (Version 0).
func Load(ctx context.Context, st Store) (Snapshot, error) {
	var l loader
	s, _, err := l.load(ctx, st)
	return s, err
}

// loader decodes and validates stored documents, remembering the last one
// so that unchanged documents are not validated again.
type loader struct {
	mu   sync.Mutex
	raw  []byte   // the last document parsed,
	snap Snapshot // what it gave
	err  error
	best Snapshot // the last valid current document read
}

// load returns the snapshot to serve and the raw current document (the old
// value for Swap). A store that holds less than the newest valid document
// this loader read (empty, or older: see ErrStoreReset) gives that document
// and an error wrapping ErrStoreReset; one of another generation is adopted,
// with that error once. A bad current document gives the newest good snapshot
// known — the stored last good copy or the last valid document this loader
// read, which may be newer when someone wrote the key by hand — and an error
// wrapping ErrBadStored; store errors give a zero snapshot.
//
// Loaders are per process: after a restart only the stored copy is known.
func (l *loader) load(ctx context.Context, st Store) (Snapshot, []byte, error) {
	// The store must hold at least what was known before reading it; a
	// write of this process that lands meanwhile is no reset.
	l.mu.Lock()
	known := l.best
	l.mu.Unlock()
	cur, good, err := st.Get(ctx)
	if err != nil {
		return Snapshot{}, nil, err
	}
	if cur == nil && good == nil {
		if re := checkReset(Snapshot{}, known); re != nil {
			l.mu.Lock()
			defer l.mu.Unlock()
			return l.best.clone(), nil, re
		}
		return Snapshot{}, nil, nil
	}
	snap, bad := l.parse(cur)
	l.mu.Lock()
	defer l.mu.Unlock()
	if bad == nil {
		re := checkReset(snap, known)
		if re != nil && re.lost {
			return l.best.clone(), cur, re
		}
		if re != nil || snap.Version > l.best.Version || snap.Generation != l.best.Generation {
			l.best = snap
		}
		if re != nil {
			return snap, cur, re
		}
		return snap, cur, nil
	}
	last, err := l.parseLocked(good)
	if l.best.Version > 0 && (err != nil || l.best.Version > last.Version) {
		last, err = l.best.clone(), nil
	}
	if err != nil {
		return Snapshot{}, cur, errors.Join(bad, fmt.Errorf("policy: the last good copy is unusable too: %w", err))
	}
	return last, cur, bad
}

// wrote records a snapshot this process has just stored: the newest it
// knows, even before it reads it back.
func (l *loader) wrote(s Snapshot) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.best = s.clone()
}

// parse decodes and validates one stored document, caching the result.
func (l *loader) parse(raw []byte) (Snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.parseLocked(raw)
}

func (l *loader) parseLocked(raw []byte) (Snapshot, error) {
	if l.raw != nil && bytes.Equal(raw, l.raw) {
		return l.snap.clone(), l.err
	}
	snap, err := l.decode(raw)
	l.raw, l.snap, l.err = clone(raw), snap, err
	return snap.clone(), err
}

func (l *loader) decode(raw []byte) (Snapshot, error) {
	if raw == nil {
		return Snapshot{}, fmt.Errorf("%w: no document", ErrBadStored)
	}
	var s Snapshot
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Snapshot{}, fmt.Errorf("%w: %s: %v", ErrBadStored, clip(raw), err)
	}
	if s.Version <= 0 {
		return Snapshot{}, fmt.Errorf("%w: version %d: want > 0", ErrBadStored, s.Version)
	}
	if err := check(s); err != nil {
		return Snapshot{}, fmt.Errorf("%w (version %d): %w", ErrBadStored, s.Version, err)
	}
	return s, nil
}

// check validates a whole snapshot: the Config and the pins. Errors are
// *FieldError values.
func check(s Snapshot) error {
	if err := ValidateConfig(s.Config); err != nil {
		return err
	}
	return validatePins(s.Pins, s.Config.Tiers)
}
