package signals

import (
	"math"
	"testing"
)

func TestBucketQuantile(t *testing.T) {
	inf := math.Inf(+1)
	for _, tc := range []struct {
		name   string
		q      float64
		bounds []float64
		cum    []float64
		want   float64 // NaN: want NaN
	}{
		// rank 990 of 1000 lies 90/100 into (0.25, 0.5].
		{"interpolates inside bucket", 0.99, []float64{0.1, 0.25, 0.5, inf}, []float64{900, 900, 1000, 1000}, 0.25 + 0.25*0.9},
		// The first bucket starts at 0: rank 50 of 100 is half way to 0.1.
		{"first bucket starts at 0", 0.5, []float64{0.1, 1, inf}, []float64{100, 100, 100}, 0.05},
		{"rank on a bucket edge", 0.5, []float64{1, 2, inf}, []float64{50, 100, 100}, 1},
		{"rank in +Inf bucket gives highest finite bound", 0.99, []float64{0.1, 0.5, inf}, []float64{10, 20, 100}, 0.5},
		{"first bound not positive", 0.5, []float64{-1, 1, inf}, []float64{10, 10, 10}, -1},
		{"non-monotonic counts are fixed", 0.5, []float64{1, 2, 3, inf}, []float64{0, 60, 50, 100}, 1 + 50.0/60},
		{"q=1 is the top of the last bucket with data", 1, []float64{1, 2, inf}, []float64{5, 10, 10}, 2},
		{"no observations", 0.5, []float64{1, inf}, []float64{0, 0}, math.NaN()},
		{"one bucket only", 0.5, []float64{inf}, []float64{10}, math.NaN()},
		{"no +Inf bucket", 0.5, []float64{1, 2}, []float64{5, 10}, math.NaN()},
		{"length mismatch", 0.5, []float64{1, inf}, []float64{5}, math.NaN()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := bucketQuantile(tc.q, tc.bounds, tc.cum)
			if math.IsNaN(tc.want) {
				if !math.IsNaN(got) {
					t.Fatalf("got %v, want NaN", got)
				}
				return
			}
			if math.Abs(got-tc.want) > 1e-12 {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestBucketQuantileDoesNotModifyInput(t *testing.T) {
	cum := []float64{0, 60, 50, 100}
	bucketQuantile(0.5, []float64{1, 2, 3, math.Inf(+1)}, cum)
	if cum[2] != 50 {
		t.Fatalf("input changed: %v", cum)
	}
}
