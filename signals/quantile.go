package signals

import (
	"math"
	"sort"
)

// bucketQuantile estimates the q-quantile (0 < q ≤ 1) of a classic
// histogram the way PromQL's histogram_quantile does: bounds are the sorted
// bucket upper bounds ending with +Inf, cum the cumulative counts. The
// quantile is interpolated linearly inside its bucket (the first bucket
// starts at 0); a rank in the +Inf bucket yields the highest finite bound.
// Fewer than two buckets, no +Inf bucket or no observations yield NaN.
func bucketQuantile(q float64, bounds, cum []float64) float64 {
	n := len(bounds)
	if n < 2 || n != len(cum) || !math.IsInf(bounds[n-1], +1) {
		return math.NaN()
	}
	c := make([]float64, n)
	copy(c, cum)
	for i := 1; i < n; i++ { // the monotonicity fix histogram_quantile applies
		c[i] = math.Max(c[i], c[i-1])
	}
	total := c[n-1]
	if total == 0 {
		return math.NaN()
	}
	rank := q * total
	b := sort.Search(n-1, func(i int) bool { return c[i] >= rank })
	if b == n-1 {
		return bounds[n-2]
	}
	if b == 0 && bounds[0] <= 0 {
		return bounds[0]
	}
	start, end, count := 0.0, bounds[b], c[b]
	if b > 0 {
		start = bounds[b-1]
		count -= c[b-1]
		rank -= c[b-1]
	}
	return start + (end-start)*(rank/count)
}
