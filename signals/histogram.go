package signals

import (
	"fmt"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// histSeries is one classic histogram series: sorted upper bounds ending
// with +Inf and their cumulative counts.
type histSeries struct {
	bounds, cum []float64
}

// counterSeries is one request counter series.
type counterSeries struct {
	v     float64
	isErr bool
}

// histogramSeries reads every series of a histogram family by series key.
func histogramSeries(mf *dto.MetricFamily) (map[string]histSeries, error) {
	out := make(map[string]histSeries, len(mf.GetMetric()))
	for _, m := range mf.GetMetric() {
		h := m.GetHistogram()
		bs := h.GetBucket()
		if len(bs) == 0 {
			return nil, fmt.Errorf("metric %q has no classic buckets (a native histogram needs classic buckets too)", mf.GetName())
		}
		hs := histSeries{bounds: make([]float64, 0, len(bs)+1), cum: make([]float64, 0, len(bs)+1)}
		for _, b := range bs {
			hs.bounds = append(hs.bounds, b.GetUpperBound())
			hs.cum = append(hs.cum, count(b.GetCumulativeCount(), b.GetCumulativeCountFloat()))
		}
		if !math.IsInf(hs.bounds[len(hs.bounds)-1], +1) {
			hs.bounds = append(hs.bounds, math.Inf(+1))
			hs.cum = append(hs.cum, count(h.GetSampleCount(), h.GetSampleCountFloat()))
		}
		out[seriesKey(m)] = hs
	}
	return out, nil
}

// count picks the float count where the integer one is not used.
func count(n uint64, f float64) float64 {
	if n == 0 && f > 0 {
		return f
	}
	return float64(n)
}

// histogramDelta sums, bucket by bucket, every series' increase since prev
// (a new or reset series counts whole) and returns sorted bounds with
// cumulative counts, as sum by (le) (increase(...)) would.
func histogramDelta(prev, cur map[string]histSeries) (bounds, cum []float64) {
	byBound := make(map[float64]float64)
	for k, c := range cur {
		p, seen := prev[k]
		reset := !seen || len(p.cum) != len(c.cum)
		for i := 0; !reset && i < len(c.cum); i++ {
			reset = c.cum[i] < p.cum[i] || c.bounds[i] != p.bounds[i]
		}
		for i, b := range c.bounds {
			d := c.cum[i]
			if !reset {
				d -= p.cum[i]
			}
			byBound[b] += d
		}
	}
	bounds = make([]float64, 0, len(byBound))
	for b := range byBound {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	cum = make([]float64, len(bounds))
	for i, b := range bounds {
		cum[i] = byBound[b]
	}
	return bounds, cum
}

// seriesKey identifies a series by its labels (Gather sorts them by name).
func seriesKey(m *dto.Metric) string {
	var b strings.Builder
	for _, lp := range m.GetLabel() {
		b.WriteString(lp.GetName())
		b.WriteByte(0xff)
		b.WriteString(lp.GetValue())
		b.WriteByte(0xff)
	}
	return b.String()
}

// labelValue is the value of label name on m ("" when absent).
func labelValue(m *dto.Metric, name string) string {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == name {
			return lp.GetValue()
		}
	}
	return ""
}
