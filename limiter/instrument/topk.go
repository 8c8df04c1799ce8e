package instrument

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Defaults of NewTopK.
const (
	// DefaultTopK is the number of consumers tracked when given k ≤ 0.
	DefaultTopK = 20
	// DefaultTopKWindow is the window when given one ≤ 0.
	DefaultTopKWindow = time.Minute
)

// Count is one tracked key's estimate over the window. The key's true
// total lies in [Count-Error, Count].
type Count struct {
	Key   string
	Count uint64 // estimate; never below the true total
	Error uint64 // the most by which Count may exceed the true total
}

// TopK finds the keys with the most refusals lately, in bounded memory. It
// keeps two space-saving sketches (Metwally, Agrawal, El Abbadi, 2005) of K
// counters each: the current window's and the previous one's. Every Window
// the current becomes the previous and the oldest is forgotten, so a key
// that stops being refused leaves within two windows. Top reports the last
// one to two windows: the counts of both sketches summed. Within a sketch,
// with N its total:
//
//   - every estimate is an overestimate by at most its Error ≤ N/K;
//   - every key whose true total exceeds N/K is tracked;
//   - the counts sum to N.
//
// A *TopK is a prometheus.Collector exposing at most K series of the gauge
// throttled_top_consumers{key}, where key is a fingerprint of the client key
// (see Fingerprint): IPs, JWT subjects and API keys never become label
// values. The keys themselves are for the admin API (Top).
//
// TopK is safe for concurrent use; mu guards everything below it.
type TopK struct {
	desc   *prometheus.Desc
	k      int
	window time.Duration
	now    func() time.Time

	mu        sync.Mutex
	end       time.Time // the current window ends here; zero before the first Add
	cur, prev sketch
}

// NewTopK returns a TopK tracking k keys per window (k ≤ 0 means
// DefaultTopK) over windows of window (≤ 0 means DefaultTopKWindow) on
// clock now (nil means time.Now). Register it on a prometheus.Registerer to
// export it.
func NewTopK(k int, window time.Duration, now func() time.Time) *TopK {
	if k <= 0 {
		k = DefaultTopK
	}
	if window <= 0 {
		window = DefaultTopKWindow
	}
	if now == nil {
		now = time.Now
	}
	return &TopK{
		desc: prometheus.NewDesc("throttled_top_consumers",
			"Estimated refused requests over the last one to two windows of the clients refused most, "+
				"by fingerprint of the client key (space-saving top-K: an overestimate by at most refusals / K).",
			[]string{"key"}, nil),
		k: k, window: window, now: now,
		cur: newSketch(k), prev: newSketch(k),
	}
}

// K returns the number of counters per window.
func (t *TopK) K() int { return t.k }

// Window returns the window length.
func (t *TopK) Window() time.Duration { return t.window }

// Add counts n more for key now. It does not allocate for a key already
// tracked.
func (t *TopK) Add(key string, n uint64) {
	if n == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rotate(t.now())
	t.cur.add(key, n)
}

// rotate moves to the window of now: one window on, the current sketch
// becomes the previous; further, both are forgotten. Called with mu held.
func (t *TopK) rotate(now time.Time) {
	if t.end.IsZero() {
		t.end = now.Add(t.window)
		return
	}
	if now.Before(t.end) {
		return
	}
	if now.Before(t.end.Add(t.window)) {
		t.prev, t.cur = t.cur, t.prev
	} else {
		t.prev.reset()
	}
	t.cur.reset()
	t.end = t.end.Add(now.Sub(t.end) / t.window * t.window).Add(t.window)
}

// Total returns the refusals counted over the windows Top reports.
func (t *TopK) Total() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rotate(t.now())
	return t.cur.total + t.prev.total
}

// Top returns at most K keys of the last one to two windows, highest count
// first (ties by key). A key tracked in one sketch only may have been
// refused in the other up to that sketch's least count, which its Error
// then includes.
func (t *TopK) Top() []Count {
	t.mu.Lock()
	t.rotate(t.now())
	merged := make(map[string]Count, 2*t.k)
	for _, s := range []*sketch{&t.cur, &t.prev} {
		for _, c := range s.heap {
			m := merged[c.key]
			m.Key, m.Count, m.Error = c.key, m.Count+c.count, m.Error+c.err
			merged[c.key] = m
		}
	}
	for key, m := range merged { // untracked in a full sketch: up to its least count there
		for _, s := range []*sketch{&t.cur, &t.prev} {
			if s.index[key] == nil && len(s.heap) == t.k {
				m.Count += s.heap[0].count
				m.Error += s.heap[0].count
			}
		}
		merged[key] = m
	}
	t.mu.Unlock()
	out := make([]Count, 0, len(merged))
	for _, m := range merged {
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b Count) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out[:min(len(out), t.k)]
}

// Reset forgets every key.
func (t *TopK) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cur.reset()
	t.prev.reset()
}

// Fingerprint is the metric label of a client key: its kind (the part
// before the first ':', e.g. "ip", "sub", "key") and the first 12 hex digits
// of the SHA-256 of the whole key, e.g. "ip:3f1a2b4c5d6e". The admin API
// shows key and fingerprint side by side.
func Fingerprint(key string) string {
	sum := sha256.Sum256([]byte(key))
	kind, _, ok := strings.Cut(key, ":")
	if !ok || len(kind) > 16 {
		kind = "key"
	}
	return strings.ToValidUTF8(kind, "?") + ":" + hex.EncodeToString(sum[:6])
}

// Describe implements prometheus.Collector.
func (t *TopK) Describe(ch chan<- *prometheus.Desc) { ch <- t.desc }

// Collect implements prometheus.Collector: at most K series, labelled by
// fingerprint.
func (t *TopK) Collect(ch chan<- prometheus.Metric) {
	for _, c := range t.Top() {
		m, err := prometheus.NewConstMetric(t.desc, prometheus.GaugeValue, float64(c.Count), Fingerprint(c.Key))
		if err != nil {
			m = prometheus.NewInvalidMetric(t.desc, err)
		}
		ch <- m
	}
}
