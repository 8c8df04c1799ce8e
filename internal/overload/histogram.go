package overload

import (
	"math"
	"math/bits"
	"sort"
	"time"
)

// subBuckets per doubling: a bucket is at most 1/32 (3.1 %) of its values wide.
const subBuckets = 32

// Histogram counts latencies in log-linear buckets (exact below 32 µs,
// then 32 buckets per doubling). It stores only the buckets in use, so a
// second of traffic costs a few hundred bytes. The zero value is empty.
// A Histogram is not safe for concurrent use.
type Histogram struct {
	buckets []bucket // sorted by index
	count   int64
	max     time.Duration
}

type bucket struct {
	index uint16
	n     uint32
}

// bucketOf is the index of the bucket holding us microseconds.
func bucketOf(us uint64) uint16 {
	if us < subBuckets {
		return uint16(us)
	}
	shift := bits.Len64(us) - 6 // us>>shift is in [32, 64)
	return uint16(shift*subBuckets + int(us>>shift))
}

// upper is the largest value, in microseconds, of bucket i.
func upper(i uint16) uint64 {
	if i < subBuckets {
		return uint64(i)
	}
	shift := int(i)/subBuckets - 1
	mant := uint64(i)%subBuckets + subBuckets
	return (mant+1)<<shift - 1
}

// maxMicros bounds what a Histogram records (about 19 hours).
const maxMicros = 1<<36 - 1

var lastBucket = bucketOf(maxMicros)

// Observe counts one latency.
func (h *Histogram) Observe(d time.Duration) {
	us := uint64(max(d, 0) / time.Microsecond)
	h.add(bucketOf(min(us, maxMicros)), 1)
	h.count++
	h.max = max(h.max, d)
}

func (h *Histogram) add(index uint16, n uint32) {
	i := sort.Search(len(h.buckets), func(i int) bool { return h.buckets[i].index >= index })
	if i < len(h.buckets) && h.buckets[i].index == index {
		h.buckets[i].n += n
		return
	}
	h.buckets = append(h.buckets, bucket{})
	copy(h.buckets[i+1:], h.buckets[i:])
	h.buckets[i] = bucket{index, n}
}

// Merge adds o's counts to h.
func (h *Histogram) Merge(o *Histogram) {
	for _, b := range o.buckets {
		h.add(b.index, b.n)
	}
	h.count += o.count
	h.max = max(h.max, o.max)
}

// Count is the number of latencies observed.
func (h *Histogram) Count() int64 { return h.count }

// Max is the largest latency observed.
func (h *Histogram) Max() time.Duration { return h.max }

// Quantile is the q-quantile (0 < q ≤ 1): the upper bound of the bucket
// holding the value of rank ⌈q·n⌉, at most the largest value observed,
// so it errs high by at most 3.1 %. It is 0 when h is empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.count == 0 {
		return 0
	}
	rank := ceilRank(q, h.count)
	var seen int64
	for _, b := range h.buckets {
		seen += int64(b.n)
		if seen >= rank && b.index != lastBucket {
			return min(time.Duration(upper(b.index)+1)*time.Microsecond-1, h.max)
		}
	}
	return h.max // the top bucket holds everything beyond maxMicros
}

// ceilRank is ⌈q·n⌉, at least 1, computed so that 0.99·100 is 99.
func ceilRank(q float64, n int64) int64 {
	return max(int64(math.Ceil(q*float64(n)-1e-9)), 1)
}
