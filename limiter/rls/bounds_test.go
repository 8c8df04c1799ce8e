package rls_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/rls"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestDescriptorEntriesBounded: a descriptor of more than MaxEntries
// entries is INVALID_ARGUMENT naming the bound (its key was built by
// repeated concatenation: 80,000 entries took 6.9 s of CPU); one of
// MaxEntries is decided, its key parts joined in order.
func TestDescriptorEntriesBounded(t *testing.T) {
	c, _ := serve(t, testEnforcer(t, limiter.NewMemory()), rls.Settings{}, nil)
	long := func(n int) *ratelimitv3.RateLimitDescriptor {
		kv := []string{"rule", "search"}
		for i := range n - 1 {
			kv = append(kv, "part", strconv.Itoa(i))
		}
		return desc(kv...)
	}
	_, err := c.ShouldRateLimit(context.Background(), request(0, long(rls.MaxEntries+1)))
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "entries") ||
		!strings.Contains(err.Error(), strconv.Itoa(rls.MaxEntries)) {
		t.Fatalf("%d entries: %v, want INVALID_ARGUMENT naming the %d entries allowed", rls.MaxEntries+1, err, rls.MaxEntries)
	}
	r, err := c.ShouldRateLimit(context.Background(), request(0, long(rls.MaxEntries)))
	if err != nil || r.GetOverallCode() != ok {
		t.Fatalf("%d entries: %v, %v; want OK", rls.MaxEntries, r, err)
	}
}
