package limiter_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// TestValidateSlidingLogCap: the sliding log keeps one entry per request,
// so its limit is capped; the error names the field and the cap.
func TestValidateSlidingLogCap(t *testing.T) {
	r := limiter.Rule{Name: "r", Algorithm: limiter.SlidingWindowLog, Limit: limiter.MaxLogLimit, Period: time.Second}
	if err := r.Validate(); err != nil {
		t.Fatalf("limit at the cap: %v", err)
	}
	r.Limit++
	err := r.Validate()
	if !errors.Is(err, limiter.ErrInvalid) || !strings.Contains(err.Error(), "limit 10001") ||
		!strings.Contains(err.Error(), "10000") {
		t.Fatalf("limit over the cap: %v, want ErrInvalid naming the limit and the cap", err)
	}
	r.Algorithm = limiter.SlidingWindowCounter
	if err := r.Validate(); err != nil {
		t.Fatalf("the cap is for the sliding log only: %v", err)
	}
}
