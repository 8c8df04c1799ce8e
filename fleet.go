package throttled

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/throttledhq/throttled/controller"
	"github.com/throttledhq/throttled/limiter/coord"
	"github.com/throttledhq/throttled/signals"
)

// Several instances on one Redis without Prometheus: every instance
// publishes its admitted requests per tier and its inner loop's saturation
// to a coord.Tally, and the leader's in-process signals read the fleet's
// through fleetGatherer, as the Prometheus defaults read every instance
// (sum of admitted rates, max of saturations). A tier's rate cap is one
// bucket for the whole fleet, so it must be sized from the fleet's
// admitted rate: sized from the leader's share it cut the tier by that
// share too, and the headroom that followed read as the end of the
// overload (a probe, then a cut: flips).

// Tally names: admittedPrefix + tier, and saturationName.
const (
	admittedPrefix = "admitted/"
	saturationName = "saturation"
)

// fleetGatherer is the local registry with the admitted counter's and the
// saturation gauge's series replaced by every live instance's, labelled
// instance="<id>". A saturation is the fleet's only from an instance that
// published within fresh (0: any in the tally): a killed instance's last
// reading, taken in the overload, would keep the fleet overloaded for the
// tally's whole window. Its frozen admitted counter stays, as it adds
// nothing to a rate (a series that went and came back would add its whole
// count).
type fleetGatherer struct {
	local   prometheus.Gatherer
	tally   *coord.Tally
	timeout time.Duration
	fresh   time.Duration
}

// Gather implements prometheus.Gatherer. When the tally cannot be read the
// admitted family is left out and the error returned, so the signal is a
// query error for this read, not the leader's own share.
func (f fleetGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := f.local.Gather()
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	fleet, ferr := f.tally.ReadAll(ctx)
	out := mfs[:0:0]
	for _, mf := range mfs {
		if n := mf.GetName(); n != signals.DefaultAdmittedCounter && n != controller.SaturationMetric {
			out = append(out, mf)
		}
	}
	if ferr != nil {
		return out, errors.Join(err, ferr)
	}
	return append(out, fleetFamilies(fleet, f.fresh)...), err
}

// fleetFamilies are the admitted counter of every instance in the tally and
// the saturation gauge of those that published within fresh (0: every one).
func fleetFamilies(fleet coord.TallyReading, fresh time.Duration) []*dto.MetricFamily {
	adm := &dto.MetricFamily{Name: strPtr(signals.DefaultAdmittedCounter), Type: dto.MetricType_COUNTER.Enum()}
	sat := &dto.MetricFamily{Name: strPtr(controller.SaturationMetric), Type: dto.MetricType_GAUGE.Enum()}
	for id, values := range fleet.Counts {
		for name, v := range values {
			if tier, ok := strings.CutPrefix(name, admittedPrefix); ok {
				adm.Metric = append(adm.Metric, &dto.Metric{
					Label:   []*dto.LabelPair{label("decision", "allowed"), label("instance", id), label("tier", tier)},
					Counter: &dto.Counter{Value: floatPtr(v)},
				})
			} else if name == saturationName && (fresh == 0 || fleet.Age[id] <= fresh) {
				sat.Metric = append(sat.Metric, &dto.Metric{Label: []*dto.LabelPair{label("instance", id)},
					Gauge: &dto.Gauge{Value: floatPtr(v)}})
			}
		}
	}
	if len(sat.Metric) == 0 {
		return []*dto.MetricFamily{adm}
	}
	return []*dto.MetricFamily{adm, sat}
}

// tallyPublishTimeout bounds one publish to the tally when the interval is
// shorter. A publish slower than the interval delays the next tick rather
// than being cut: go-redis closes a connection whose command outlived its
// context, so a Redis stalled for a few intervals (a loaded host) would
// cost a new connection (HELLO, CLIENT SETINFO) every tick of every
// instance.
const tallyPublishTimeout = time.Second

// publishAdmitted publishes this instance's readings (localReadings) every
// interval until ctx ends, then takes them out of the tally (a scale-down:
// the leader stops reading this instance's saturation at once).
func publishAdmitted(ctx context.Context, g prometheus.Gatherer, t *coord.Tally, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = t.Remove(rctx) // if Redis is down, the tally's window drops them
	}()
	for {
		if counts, err := localReadings(g); err == nil {
			pctx, cancel := context.WithTimeout(ctx, max(interval, tallyPublishTimeout))
			_ = t.Publish(pctx, counts) // a failed publish is retried next tick; the leader reads a query error meanwhile
			cancel()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// localReadings are what this instance publishes: its admitted counter's
// allowed series summed by tier (admittedPrefix + tier), and the largest
// series of its saturation gauge (saturationName) if it has one.
func localReadings(g prometheus.Gatherer) (map[string]float64, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	counts := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() == controller.SaturationMetric {
			for _, m := range mf.GetMetric() {
				counts[saturationName] = max(counts[saturationName], m.GetGauge().GetValue())
			}
		}
		if mf.GetName() != signals.DefaultAdmittedCounter {
			continue
		}
		for _, m := range mf.GetMetric() {
			var tier, decision string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "tier":
					tier = l.GetValue()
				case "decision":
					decision = l.GetValue()
				}
			}
			if tier != "" && signals.IsAdmitted(decision) {
				counts[admittedPrefix+tier] += m.GetCounter().GetValue()
			}
		}
	}
	return counts, nil
}

func label(name, value string) *dto.LabelPair { return &dto.LabelPair{Name: &name, Value: &value} }
func strPtr(s string) *string                 { return &s }
func floatPtr(f float64) *float64             { return &f }
