package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// limiterReader reads the tier multipliers the controller published, from
// the demo's own /metrics.
type limiterReader struct{ admin string }

func (l limiterReader) multipliers() map[string]float64 {
	out := map[string]float64{}
	resp, err := http.Get(l.admin + "/metrics")
	if err != nil {
		return out
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return out
	}
	if mf := families["throttled_tier_multiplier"]; mf != nil {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "tier" {
					out[l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	return out
}

// demoView draws the live table and the summary.
type demoView struct {
	w       io.Writer
	redraw  bool
	gen     *loadGen
	backend *backend
	mults   limiterReader
	start   time.Time
	minMult map[string]float64
	history []string
}

func newDemoView(w io.Writer, plain bool, gen *loadGen, b *backend, m limiterReader) *demoView {
	redraw := false
	if f, ok := w.(*os.File); ok && !plain {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			redraw = true
		}
	}
	return &demoView{w: w, redraw: redraw, gen: gen, backend: b, mults: m, start: time.Now(),
		minMult: map[string]float64{"free": 1, "premium": 1}}
}

func (v *demoView) loop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			v.draw(v.gen.swap(), every)
		}
	}
}

// tierOf maps a load class to the tier its clients are in.
func tierOf(class string) string {
	if class == "greedy" {
		return "free"
	}
	return class
}

func (v *demoView) draw(win map[string]*window, every time.Duration) {
	m := v.mults.multipliers()
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "t=%3.0fs\tclients\tmultiplier\toffered/s\tgoodput/s\t429/s\t503/s\tp99 ok\t\n", time.Since(v.start).Seconds())
	for _, t := range demoTiers {
		w := win[t.name]
		mult, ok := m[tierOf(t.name)]
		ms := "-"
		if ok {
			ms = fmt.Sprintf("%.2f", mult)
			v.minMult[tierOf(t.name)] = min(v.minMult[tierOf(t.name)], mult)
		}
		per := every.Seconds()
		fmt.Fprintf(tw, "\t%s\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%v\t\n", label(t.name), ms,
			float64(w.sent.Load())/per, float64(w.ok.Load())/per, float64(w.over.Load())/per,
			float64(w.shed.Load())/per, w.p99().Round(time.Millisecond))
	}
	tw.Flush()
	if v.redraw {
		fmt.Fprint(v.w, "\033[H\033[2J")
		fmt.Fprintf(v.w, "throttled demo — backend capacity ≈ %d req/s (Ctrl-C to stop)\n\n", v.backend.capacity())
	}
	fmt.Fprint(v.w, b.String())
	if !v.redraw {
		fmt.Fprintln(v.w)
	}
}

func label(class string) string {
	if class == "greedy" {
		return "free (1 greedy key)"
	}
	return class
}

// summary prints the totals of the whole run.
func (v *demoView) summary() {
	fmt.Fprintf(v.w, "\nsummary after %v:\n", time.Since(v.start).Round(time.Second))
	tw := tabwriter.NewWriter(v.w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tsent\t2xx\t429\t503\tother\tp99 ok\tlowest multiplier\t")
	for _, t := range demoTiers {
		w := v.gen.total[t.name]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%v\t%.2f\t\n", label(t.name), w.sent.Load(), w.ok.Load(),
			w.over.Load(), w.shed.Load(), w.other.Load()+w.dropped.Load(), w.p99().Round(time.Millisecond), v.minMult[tierOf(t.name)])
	}
	tw.Flush()
	fmt.Fprintln(v.w, "\n429: the client spent its quota. 503: shed because the controller cut its tier's multiplier")
	fmt.Fprintln(v.w, "while the backend was overloaded (free first: lowest priority).")
}
