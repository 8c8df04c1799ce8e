package wait_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/wait"
)

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int64
	}{{0, 1}, {time.Millisecond, 1}, {time.Second, 1}, {time.Second + 1, 2}, {90 * time.Second, 90}} {
		if got := wait.Seconds(tc.d); got != tc.want {
			t.Errorf("Seconds(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestJitteredBounds(t *testing.T) {
	// randN returning its largest value gives the upper bound; 0 the lower.
	top := func(n int64) int64 { return n - 1 }
	zero := func(int64) int64 { return 0 }
	for _, tc := range []struct {
		d        time.Duration
		lo, high int64
	}{{time.Second, 1, 2}, {10 * time.Second, 10, 15}, {3 * time.Second, 3, 4}} {
		if got := wait.Jittered(tc.d, zero); got != tc.lo {
			t.Errorf("Jittered(%v, 0) = %d, want %d", tc.d, got, tc.lo)
		}
		if got := wait.Jittered(tc.d, top); got != tc.high {
			t.Errorf("Jittered(%v, max) = %d, want %d", tc.d, got, tc.high)
		}
	}
}

func TestSleepCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := wait.Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context = %v, want context.Canceled", err)
	}
	if err := wait.Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v", err)
	}
}

// Every calls f until ctx ends and then returns nil: here f ends ctx on its
// third call, and there is no fourth.
func TestEveryUntilCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := wait.Every(ctx, time.Millisecond, func(c context.Context) {
		if c != ctx {
			t.Error("f was not given Every's context")
		}
		if n++; n == 3 {
			cancel()
		}
	})
	if err != nil || n != 3 {
		t.Errorf("Every = %v after %d calls, want nil after 3", err, n)
	}
}

// Until stops at f's first done: here its second call, with ctx still live.
func TestUntilStopsWhenDone(t *testing.T) {
	n := 0
	err := wait.Until(context.Background(), time.Millisecond, func(context.Context) bool {
		n++
		return n == 2
	})
	if err != nil || n != 2 {
		t.Errorf("Until = %v after %d calls, want nil after 2", err, n)
	}
}
