package signals

import (
	"math"
	"runtime"
	"testing"
	"time"
)

// TestCPUWaitIsTheWaitingShare: the fraction of the window's run and wait
// times spent waiting; the first read only sets the baseline, a window
// without either time (or with times that went back, as threads ended) is
// NoData, and no times at all is Unsupported.
func TestCPUWaitIsTheWaitingShare(t *testing.T) {
	times := []struct {
		run, wait time.Duration
		ok        bool
	}{{10, 5, true}, {40, 35, true}, {40, 35, true}, {30, 40, true}, {0, 0, false}}
	i := 0
	c := &CPUWait{now: time.Now, sample: func() schedSample {
		s := times[i]
		i++
		return schedSample{run: s.run * time.Millisecond, wait: s.wait * time.Millisecond, ok: s.ok}
	}}
	want := []struct {
		v      float64
		reason Reason
	}{{math.NaN(), NoBaseline}, {0.5, OK}, {math.NaN(), NoData}, {math.NaN(), NoData}, {math.NaN(), Unsupported}}
	for k, w := range want {
		got := c.Read()
		if got.Reason != w.reason || (w.reason == OK && got.V != w.v) || got.Valid != (w.reason == OK) {
			t.Fatalf("read %d: %v (%s), want %v (%s)", k, got, got.Reason, w.v, w.reason)
		}
	}
	if u := c.Usual(); u != 0.5 {
		t.Fatalf("usual after one valid read of 0.5: %v", u)
	}
}

// TestCPUWaitUsualIsTheLeastOfTheLastReads: the usual wait forgets a
// read UsualReads valid reads later.
func TestCPUWaitUsualIsTheLeastOfTheLastReads(t *testing.T) {
	var run, wait time.Duration
	next := 0.1 // the fraction of the next window
	c := &CPUWait{now: time.Now, sample: func() schedSample {
		w := time.Duration(next * 1000)
		run, wait = run+1000-w, wait+w
		return schedSample{run: run, wait: wait, ok: true}
	}}
	c.Read() // baseline
	c.Read() // 0.1
	next = 0.8
	for range UsualReads - 1 {
		c.Read()
	}
	if u := c.Usual(); math.Abs(u-0.1) > 1e-9 {
		t.Fatalf("usual %v with 0.1 among the last %d reads, want 0.1", u, UsualReads)
	}
	c.Read()
	if u := c.Usual(); math.Abs(u-0.8) > 1e-9 {
		t.Fatalf("usual %v once 0.1 is %d reads old, want 0.8", u, UsualReads+1)
	}
}

// TestCPUWaitReadsThisProcess: on Linux the reader sees this process's
// threads: a window in which a goroutine spins reads a fraction in [0, 1].
func TestCPUWaitReadsThisProcess(t *testing.T) {
	if runtime.GOOS != "linux" {
		if v := NewCPUWait().Read(); v.Reason != Unsupported {
			t.Fatalf("CPU wait on %s: %v, want Unsupported", runtime.GOOS, v)
		}
		return
	}
	c := NewCPUWait()
	if v := c.Read(); v.Reason != NoBaseline {
		t.Fatalf("first read %v (%s), want NoBaseline", v, v.Reason)
	}
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
	}
	f, d := c.ReadWindow()
	if !f.Valid || f.V < 0 || f.V > 1 {
		t.Fatalf("CPU wait after 50 ms of work: %v (%s), want a fraction", f, f.Reason)
	}
	if !d.Valid || d.V < 0 || d.V > 0.05 {
		t.Fatalf("run delay after 50 ms of work: %v (%s), want a wait per slice in [0, 50 ms]", d, d.Reason)
	}
}

// TestCPUWaitRunDelayIsTheWaitPerSlice: the run delay is the window's wait
// over the time slices run in it. Two windows with the same fraction tell
// a process that wakes often and waits a little each time (fed) from one
// that waits long for each slice (starved); a window without slices has
// no run delay.
func TestCPUWaitRunDelayIsTheWaitPerSlice(t *testing.T) {
	steps := []schedSample{
		{run: 0, wait: 0, slices: 0, ok: true},
		{run: 10 * time.Millisecond, wait: 10 * time.Millisecond, slices: 1000, ok: true}, // 10 µs a slice
		{run: 20 * time.Millisecond, wait: 20 * time.Millisecond, slices: 1010, ok: true}, // 1 ms a slice
		{run: 30 * time.Millisecond, wait: 20 * time.Millisecond, slices: 1010, ok: true}, // ran without a new slice
	}
	i := 0
	c := &CPUWait{now: time.Now, sample: func() schedSample { i++; return steps[i-1] }}
	if _, d := c.ReadWindow(); d.Reason != NoBaseline {
		t.Fatalf("first read: run delay %v (%s), want NoBaseline", d, d.Reason)
	}
	for k, want := range []float64{10e-6, 1e-3} {
		f, d := c.ReadWindow()
		if !f.Valid || f.V != 0.5 || !d.Valid || math.Abs(d.V-want) > 1e-12 {
			t.Fatalf("window %d: fraction %v, run delay %v (%s); want 0.5 and %v s", k+1, f, d, d.Reason, want)
		}
	}
	if f, d := c.ReadWindow(); !f.Valid || d.Valid || d.Reason != NoData {
		t.Fatalf("a window without slices: fraction %v, run delay %v (%s); want a fraction and NoData", f, d, d.Reason)
	}
}
