package instrument

import (
	"cmp"
	"slices"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultTopK is the number of consumers NewTopK tracks when given k ≤ 0.
const DefaultTopK = 20

// Count is one tracked key's estimate. The key's true total lies in
// [Count-Error, Count].
type Count struct {
	Key   string
	Count uint64 // estimate; never below the true total
	Error uint64 // the most by which Count may exceed the true total
}

// TopK finds the keys with the most refusals in bounded memory, with the
// space-saving algorithm (Metwally, Agrawal, El Abbadi, 2005). It keeps K
// counters. A key already tracked adds to its counter; a new key takes the
// smallest counter's place and inherits its count as its error. So, with N
// the total added:
//
//   - every estimate is an overestimate by at most its Error ≤ N/K;
//   - every key whose true total exceeds N/K is tracked;
//   - the counts sum to N.
//
// Totals are since construction (or the last Reset).
//
// A *TopK is a prometheus.Collector exposing at most K series of the gauge
// throttled_top_consumers{key}. Keys become label values: use keys that are
// safe to show (an IP, a tier or a hashed API key, never a secret).
//
// TopK is safe for concurrent use.
type TopK struct {
	desc *prometheus.Desc

	mu    sync.Mutex
	k     int
	index map[string]*topCounter
	heap  []*topCounter // min-heap by count
	total uint64
}

type topCounter struct {
	key        string
	count, err uint64
	pos        int // index in heap
}

// NewTopK returns a TopK tracking k keys (k ≤ 0 means DefaultTopK). Register
// it on a prometheus.Registerer to export it.
func NewTopK(k int) *TopK {
	if k <= 0 {
		k = DefaultTopK
	}
	return &TopK{
		desc: prometheus.NewDesc("throttled_top_consumers",
			"Estimated refused requests of the keys refused most (space-saving top-K: "+
				"an overestimate by at most total refusals / K).",
			[]string{"key"}, nil),
		k:     k,
		index: make(map[string]*topCounter, k),
		heap:  make([]*topCounter, 0, k),
	}
}

// K returns the number of counters.
func (t *TopK) K() int { return t.k }

// Add counts n more for key. It does not allocate for a key already
// tracked.
func (t *TopK) Add(key string, n uint64) {
	if n == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += n
	if c := t.index[key]; c != nil {
		c.count += n
		t.down(c.pos)
		return
	}
	if len(t.heap) < t.k {
		c := &topCounter{key: key, count: n, pos: len(t.heap)}
		t.heap = append(t.heap, c)
		t.index[key] = c
		t.up(c.pos)
		return
	}
	c := t.heap[0] // the smallest: replace it
	delete(t.index, c.key)
	c.key, c.err, c.count = key, c.count, c.count+n
	t.index[key] = c
	t.down(0)
}

// Total returns the sum of everything added (N).
func (t *TopK) Total() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// Top returns the tracked keys, highest count first (ties by key).
func (t *TopK) Top() []Count {
	t.mu.Lock()
	out := make([]Count, len(t.heap))
	for i, c := range t.heap {
		out[i] = Count{Key: c.key, Count: c.count, Error: c.err}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b Count) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
	return out
}

// Reset forgets every key, e.g. to report per window rather than since start.
func (t *TopK) Reset() {
	t.mu.Lock()
	defer t.mu.Unlock()
	clear(t.index)
	clear(t.heap)
	t.heap = t.heap[:0]
	t.total = 0
}

// Describe implements prometheus.Collector.
func (t *TopK) Describe(ch chan<- *prometheus.Desc) { ch <- t.desc }

// Collect implements prometheus.Collector.
func (t *TopK) Collect(ch chan<- prometheus.Metric) {
	top := t.Top()
	seen := make(map[string]struct{}, len(top))
	for _, c := range top {
		// Label values must be UTF-8; two keys that differ only in invalid
		// bytes would then clash, and the higher count is kept.
		key := strings.ToValidUTF8(c.Key, "\uFFFD")
		if _, dup := seen[key]; dup {
			continue
		}
		seen[key] = struct{}{}
		m, err := prometheus.NewConstMetric(t.desc, prometheus.GaugeValue, float64(c.Count), key)
		if err != nil {
			m = prometheus.NewInvalidMetric(t.desc, err)
		}
		ch <- m
	}
}

func (t *TopK) less(i, j int) bool { return t.heap[i].count < t.heap[j].count }

func (t *TopK) swap(i, j int) {
	h := t.heap
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}

func (t *TopK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.less(i, p) {
			return
		}
		t.swap(i, p)
		i = p
	}
}

func (t *TopK) down(i int) {
	n := len(t.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && t.less(r, l) {
			m = r
		}
		if !t.less(m, i) {
			return
		}
		t.swap(i, m)
		i = m
	}
}
