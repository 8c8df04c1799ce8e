package overload

import (
	"context"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// generator sends open-loop traffic: every request goes out when its
// schedule says, whatever became of the earlier ones, with at most max in
// flight (beyond, requests are counted as Dropped and not sent).
type generator struct {
	client   *http.Client
	urls     []string
	split    []float64
	col      *collector
	lay      layout
	start    time.Time
	jitter   float64
	max      int64
	pick     func() string // a Fleet's balancer; nil: split over urls
	inflight atomic.Int64
	wg       sync.WaitGroup // requests in flight
}

func newGenerator(urls []string, split []float64, col *collector, lay layout, rs RunSettings) *generator {
	tr := &http.Transport{MaxIdleConns: rs.MaxInFlight, MaxIdleConnsPerHost: rs.MaxInFlight,
		IdleConnTimeout: 30 * time.Second, DisableCompression: true}
	return &generator{client: &http.Client{Transport: tr, Timeout: rs.Timeout}, urls: urls, split: split,
		col: col, lay: lay, jitter: rs.Jitter, max: int64(rs.MaxInFlight)}
}

// slot is the k-th request of a phase: its due time and key.
type slot struct {
	due time.Duration // since the start
	key string
}

// schedule walks one load's requests in order. In a phase of rate r the
// k-th request is due at (k + ½ + jitter·u)/r after the phase's start, u
// uniform in [-½, ½): uniform pacing, never reordered, ⌊r·len + ½⌋
// requests per phase.
type schedule struct {
	load  Load
	lay   layout
	rng   *rand.Rand
	jit   float64
	phase Phase
	k     int
}

// next is the next slot, false when the run is over.
func (s *schedule) next() (slot, bool) {
	for s.phase < NumPhases {
		r := s.load.Rate[s.phase]
		from, to := float64(s.lay.start(s.phase)), float64(s.lay.end(s.phase))
		at := from + (float64(s.k)+0.5+s.jit*(s.rng.Float64()-0.5))/math.Max(r, 1e-9)
		if r <= 0 || from+(float64(s.k)+0.5)/r >= to {
			s.phase, s.k = s.phase+1, 0
			continue
		}
		key := s.load.Keys[s.k%s.load.Active[s.phase]]
		s.k++
		return slot{due: time.Duration(at * float64(time.Second)), key: key}, true
	}
	return slot{}, false
}

// drive sends load i's requests until its schedule or ctx ends.
func (g *generator) drive(ctx context.Context, i int, l Load) {
	s := &schedule{load: l, lay: g.lay, rng: rand.New(rand.NewPCG(uint64(i)+1, 7)), jit: g.jitter}
	pick := newPicker(g.split)
	defer func() { // every second before this is complete as far as load i goes
		end := time.Duration(g.lay.seconds) * time.Second
		if ctx.Err() != nil {
			end = min(end, time.Since(g.start))
		}
		g.col.due[i].Store(int64(end))
	}()
	for {
		sl, ok := s.next()
		if !ok {
			return
		}
		g.col.due[i].Store(int64(sl.due))
		if wait := sl.due - time.Since(g.start); wait > time.Millisecond {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		} else if ctx.Err() != nil {
			return
		}
		url := ""
		if g.pick != nil {
			url = g.pick()
		} else {
			url = g.urls[pick.next()]
		}
		g.send(int(sl.due/time.Second), l.Name, url, sl.key)
	}
}

// send sends one request of second k, or drops it.
func (g *generator) send(k int, load, url, key string) {
	if g.inflight.Add(1) > g.max {
		g.inflight.Add(-1)
		g.col.drop(k, load)
		return
	}
	g.col.begin(k)
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer g.inflight.Add(-1)
		cl, lat := g.do(url, key)
		g.col.finish(k, load, cl, lat)
	}()
}

// do sends one request and classifies the answer; lat is from sending to
// the end of the body.
func (g *generator) do(url, key string) (Class, time.Duration) {
	req, err := http.NewRequest(http.MethodGet, url+"/", nil)
	if err != nil {
		return Failed, 0
	}
	req.Header.Set(KeyHeader, key)
	t0 := time.Now()
	resp, err := g.client.Do(req)
	if err != nil {
		return Failed, time.Since(t0)
	}
	defer resp.Body.Close()
	var buf [512]byte // a refusal's JSON fits
	var head []byte
	if resp.StatusCode == http.StatusServiceUnavailable {
		n, _ := io.ReadFull(resp.Body, buf[:])
		head = buf[:n]
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return Failed, time.Since(t0)
	}
	return Classify(resp.StatusCode, resp.Header, head), time.Since(t0)
}

// picker spreads requests over instances by weight (smooth weighted round
// robin: exact shares over every cycle, evenly interleaved).
type picker struct{ weight, cur []float64 }

func newPicker(w []float64) *picker { return &picker{weight: w, cur: make([]float64, len(w))} }

func (p *picker) next() int {
	best, total := 0, 0.0
	for i, w := range p.weight {
		p.cur[i] += w
		total += w
		if p.cur[i] > p.cur[best] {
			best = i
		}
	}
	p.cur[best] -= total
	return best
}
