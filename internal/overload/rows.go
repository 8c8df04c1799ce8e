package overload

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// Counts are the requests of one load in one second, or a sum of those.
type Counts struct {
	Class        [NumClasses]int64 // by what became of them
	WithinTarget int64             // 2xx answered within the latency target
	Latency      Histogram         // of the 2xx answers
}

// Sent is every scheduled request, dropped ones included.
func (c *Counts) Sent() int64 {
	var n int64
	for _, v := range c.Class {
		n += v
	}
	return n
}

// Add adds o to c.
func (c *Counts) Add(o *Counts) {
	for i, v := range o.Class {
		c.Class[i] += v
	}
	c.WithinTarget += o.WithinTarget
	c.Latency.Merge(&o.Latency)
}

// Row is one second of a run.
type Row struct {
	Second   int     // since the start
	Phase    Phase   // the phase the second belongs to
	Capacity float64 // the backend's capacity in that phase, req/s
	// Loads holds the counts by load name ("premium", "free", "greedy").
	Loads map[string]*Counts
	// Multipliers is the last probe sample before the second ended (nil
	// if there was none yet).
	Multipliers map[string]float64
}

// Total sums the row's loads.
func (r *Row) Total() Counts {
	var c Counts
	for _, l := range r.Loads {
		c.Add(l)
	}
	return c
}

// withinTargetP99 tells whether the row's 2xx p99 is within the target,
// exactly: at least ⌈0.99·n⌉ of its n 2xx answers were within. A second
// without any 2xx is not.
func withinTargetP99(c *Counts) bool {
	ok := c.Class[OK]
	return ok > 0 && c.WithinTarget >= ceilRank(0.99, ok)
}

// layout places whole seconds in phases: thirds, the remainder to After.
type layout struct{ seconds, third int }

func newLayout(d time.Duration) layout {
	n := int(d / time.Second)
	return layout{seconds: n, third: n / 3}
}

func (l layout) phaseOf(second int) Phase {
	return Phase(min(second/max(l.third, 1), int(After)))
}

// start is the first second of phase p.
func (l layout) start(p Phase) int { return int(p) * l.third }

// end is the second after phase p.
func (l layout) end(p Phase) int {
	if p == After {
		return l.seconds
	}
	return l.start(p + 1)
}

// collector holds the rows of a run. Drivers publish, in due, the time
// (since start) their next request is due; second k is finished once every
// driver is past its end and none of its requests is in flight.
type collector struct {
	target time.Duration
	due    []atomic.Int64 // per driver, nanoseconds since start
	mu     sync.Mutex     // guards the fields below
	rows   []Row
	flying []int // requests in flight per second
	done   int   // rows[:done] are finished
}

func newCollector(sc Scenario, l layout, target time.Duration) *collector {
	c := &collector{target: target, due: make([]atomic.Int64, len(sc.Loads)),
		rows: make([]Row, l.seconds), flying: make([]int, l.seconds)}
	for k := range c.rows {
		p := l.phaseOf(k)
		r := Row{Second: k, Phase: p, Capacity: sc.CapacityIn(p), Loads: map[string]*Counts{}}
		for _, ld := range sc.Loads {
			if r.Loads[ld.Name] == nil {
				r.Loads[ld.Name] = &Counts{}
			}
		}
		c.rows[k] = r
	}
	return c
}

// begin counts a request of second k going out.
func (c *collector) begin(k int) {
	c.mu.Lock()
	c.flying[k]++
	c.mu.Unlock()
}

// finish counts the outcome of a request of second k that began.
func (c *collector) finish(k int, load string, cl Class, lat time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.flying[k]--
	c.count(k, load, cl, lat)
}

// drop counts a request of second k that was never sent.
func (c *collector) drop(k int, load string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.count(k, load, Dropped, 0)
}

// count needs c.mu.
func (c *collector) count(k int, load string, cl Class, lat time.Duration) {
	n := c.rows[k].Loads[load]
	n.Class[cl]++
	if cl == OK {
		n.Latency.Observe(lat)
		if lat <= c.target {
			n.WithinTarget++
		}
	}
}

// finished hands out the rows finished since the last call, up to limit,
// with the multipliers in effect at their end.
func (c *collector) finished(limit int, mults func(time.Duration) map[string]float64) []Row {
	wm := time.Duration(math.MaxInt64)
	for i := range c.due {
		wm = min(wm, time.Duration(c.due[i].Load()))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	from := c.done
	for c.done < min(limit, len(c.rows)) && time.Duration(c.done+1)*time.Second <= wm && c.flying[c.done] == 0 {
		c.rows[c.done].Multipliers = mults(time.Duration(c.done+1) * time.Second)
		c.done++
	}
	return c.rows[from:c.done:c.done]
}
