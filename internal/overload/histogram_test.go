package overload

import (
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

func TestHistogramQuantileErrsHighByAtMostABucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var all []time.Duration
	for range 5000 {
		d := time.Duration(rng.ExpFloat64() * float64(30*time.Millisecond))
		h.Observe(d)
		all = append(all, d)
	}
	sort.Slice(all, func(i, j int) bool { return all[i] < all[j] })
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
		exact := all[ceilRank(q, int64(len(all)))-1]
		got := h.Quantile(q)
		if got < exact || float64(got) > float64(exact)*(1+1.0/subBuckets)+float64(time.Microsecond) {
			t.Errorf("q%v = %v, exact %v: want within [exact, exact·(1+1/32)]", q, got, exact)
		}
	}
	if h.Count() != 5000 || h.Max() != all[len(all)-1] {
		t.Fatalf("count %d max %v", h.Count(), h.Max())
	}
}

func TestHistogramMerge(t *testing.T) {
	var a, b, both Histogram
	for i := range 100 {
		d := time.Duration(i+1) * time.Millisecond
		if i%2 == 0 {
			a.Observe(d)
		} else {
			b.Observe(d)
		}
		both.Observe(d)
	}
	a.Merge(&b)
	if a.Count() != 100 || a.Quantile(0.99) != both.Quantile(0.99) || a.Quantile(0.5) != both.Quantile(0.5) || a.Max() != both.Max() {
		t.Fatalf("merged: n %d p99 %v p50 %v; direct: p99 %v p50 %v", a.Count(), a.Quantile(0.99), a.Quantile(0.5),
			both.Quantile(0.99), both.Quantile(0.5))
	}
}

func TestHistogramEdges(t *testing.T) {
	var h Histogram
	if h.Quantile(0.99) != 0 {
		t.Fatal("empty histogram: want 0")
	}
	h.Observe(-time.Second) // clock oddities count as 0
	h.Observe(100 * time.Hour)
	if h.Count() != 2 || h.Quantile(1) != 100*time.Hour {
		t.Fatalf("count %d, q1 %v", h.Count(), h.Quantile(1))
	}
	if r := ceilRank(0.99, 100); r != 99 {
		t.Fatalf("ceilRank(0.99, 100) = %d, want 99", r)
	}
	if r := ceilRank(0.99, 298); r != 296 {
		t.Fatalf("ceilRank(0.99, 298) = %d, want 296", r)
	}
}

func TestBucketsAreContiguous(t *testing.T) {
	for us := uint64(0); us < 1<<20; us++ {
		i := bucketOf(us)
		if us > upper(i) || (i > 0 && us <= upper(i-1)) {
			t.Fatalf("%d µs in bucket %d of upper %d (previous upper %d)", us, i, upper(i), upper(i-1))
		}
	}
	if i := bucketOf(maxMicros); upper(i) != maxMicros {
		t.Fatalf("last bucket %d ends at %d, want %d", i, upper(i), uint64(maxMicros))
	}
}
