package overload_test

import (
	"fmt"
	"net/http"

	"github.com/throttledhq/throttled/internal/overload"
)

func ExampleLookup() {
	sc, err := overload.Lookup("surge", overload.BackendSettings{}.Capacity())
	if err != nil {
		panic(err)
	}
	for _, l := range sc.Loads {
		fmt.Printf("%s: %v req/s over %v of %d keys\n", l.Name, l.Rate, l.Active, len(l.Keys))
	}
	for _, t := range sc.Tiers {
		fmt.Printf("tier %s: priority %d, %d req/s per key, burst %d, keys %v\n", t.Name, t.Priority, t.Quota, t.Burst, t.Keys)
	}
	fmt.Println("default tier:", sc.DefaultTier)
	// Output:
	// premium: [200 200 200] req/s over [4 4 4] of 4 keys
	// free: [100 1000 100] req/s over [10 100 10] of 100 keys
	// greedy: [15 15 15] req/s over [1 1 1] of 1 keys
	// tier premium: priority 0, 50 req/s per key, burst 50, keys [premium-0 premium-1 premium-2 premium-3]
	// tier free: priority 1, 10 req/s per key, burst 10, keys []
	// default tier: free
}

func ExampleClassify() {
	h := http.Header{}
	fmt.Println(overload.Classify(503, h, []byte(`{"error":"service overloaded, retry later","reason":"shed"}`)))
	fmt.Println(overload.Classify(503, h, []byte(`{"reason":"bulkhead"}`)))
	h.Set(overload.MarkerHeader, "1")
	fmt.Println(overload.Classify(503, h, nil))
	fmt.Println(overload.Classify(429, nil, nil))
	// Output:
	// shed
	// bulkhead
	// backend_503
	// over_quota
}
