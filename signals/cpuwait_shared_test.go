package signals

import (
	"testing"
	"time"
)

// TestSharedCPUWaitReadsOncePerPeriod: readers within `every` of the last
// window get its value without reading the threads' times again; the
// first read after it takes a new window.
func TestSharedCPUWaitReadsOncePerPeriod(t *testing.T) {
	now := time.Unix(1000, 0)
	var run, wait time.Duration
	samples := 0
	c := &CPUWait{now: func() time.Time { return now }, sample: func() schedSample {
		samples++
		run, wait = run+3*time.Millisecond, wait+time.Millisecond
		return schedSample{run: run, wait: wait, slices: int64(samples), ok: true}
	}}
	s := NewSharedCPUWait(c, 90*time.Millisecond)
	if v := s.Read(); v.Valid || v.Reason != NoBaseline {
		t.Fatalf("first read: %v (%s), want NoBaseline", v, v.Reason)
	}
	now = now.Add(90 * time.Millisecond)
	for i := range 30 { // thirty loops in one period
		if v := s.Read(); !v.Valid || v.V != 0.25 {
			t.Fatalf("reader %d after 90 ms: %v (%s), want 0.25", i, v, v.Reason)
		}
		now = now.Add(time.Millisecond)
	}
	if d := s.RunDelay(); !d.Valid || d.V != 0.001 {
		t.Fatalf("run delay of the same window: %v (%s), want 1 ms of wait over 1 slice", d, d.Reason)
	}
	if samples != 2 {
		t.Errorf("thirty readers within one period sampled the threads %d times in all, want 2 (baseline and one window)", samples)
	}
	now = now.Add(70 * time.Millisecond)
	if s.Read(); samples != 3 {
		t.Errorf("a read 100 ms after the window began: %d samples, want 3", samples)
	}
}
