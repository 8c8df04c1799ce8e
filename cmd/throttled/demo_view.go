package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/throttledhq/throttled/internal/overload"
)

// demoView draws one table per second and the summary. Rows come from
// overload.Run, exact: every request lands in the second it was sent.
type demoView struct {
	w        io.Writer
	redraw   bool
	capacity float64
}

func newDemoView(w io.Writer, plain bool, capacity float64) *demoView {
	redraw := false
	if f, ok := w.(*os.File); ok && !plain {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			redraw = true
		}
	}
	return &demoView{w: w, redraw: redraw, capacity: capacity}
}

// demoLoads are the row's loads in display order.
var demoLoads = []struct{ load, tier, label string }{
	{"premium", "premium", "premium"},
	{"free", "free", "free"},
	{"greedy", "free", "free (1 greedy key)"},
}

// row draws one second.
func (v *demoView) row(r overload.Row) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "t=%3ds %s\tmultiplier\tsent\t2xx\t429\t503 shed\t503 backend\tp99 2xx\t\n", r.Second, r.Phase)
	for _, l := range demoLoads {
		c := r.Loads[l.load]
		if c == nil {
			continue
		}
		mult := "-"
		if m, ok := r.Multipliers[l.tier]; ok {
			mult = fmt.Sprintf("%.2f", m)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%v\t\n", l.label, mult, c.Sent(), c.Class[overload.OK],
			c.Class[overload.OverQuota], c.Class[overload.Shed]+c.Class[overload.Bulkhead]+c.Class[overload.Breaker],
			c.Class[overload.Backend503], c.Latency.Quantile(0.99).Round(time.Millisecond))
	}
	t := r.Total()
	fmt.Fprintf(tw, "goodput\t%.2f·C\t\t%d\t\t\t\t\t\n", float64(t.WithinTarget)/r.Capacity, t.Class[overload.OK])
	tw.Flush()
	if v.redraw {
		fmt.Fprint(v.w, "\033[H\033[2J")
		fmt.Fprintf(v.w, "throttled demo — backend capacity %.0f req/s (Ctrl-C to stop)\n\n", v.capacity)
	}
	fmt.Fprint(v.w, b.String())
	if !v.redraw {
		fmt.Fprintln(v.w)
	}
}

// summary prints the run's totals and ends with the bench's headline.
func (v *demoView) summary(rep overload.Report) {
	fmt.Fprintf(v.w, "\nsummary after %d s:\n", len(rep.Rows))
	tw := tabwriter.NewWriter(v.w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "clients\tsent\t2xx\t429\t503 shed\t503 backend\tother\tp99 2xx\t")
	for _, l := range demoLoads {
		c, ok := rep.Totals[l.load]
		if !ok {
			continue
		}
		other := c.Class[overload.Other] + c.Class[overload.Failed] + c.Class[overload.Dropped]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%v\t\n", l.label, c.Sent(), c.Class[overload.OK], c.Class[overload.OverQuota],
			c.Class[overload.Shed]+c.Class[overload.Bulkhead]+c.Class[overload.Breaker], c.Class[overload.Backend503], other,
			c.Latency.Quantile(0.99).Round(time.Millisecond))
	}
	tw.Flush()
	fmt.Fprintln(v.w, "\n429: the client spent its own quota. 503 shed: throttled refused a request the client had every right")
	fmt.Fprintln(v.w, "to send, lowest priority first, to keep the backend within its capacity; 503 backend: the backend's own")
	fmt.Fprintln(v.w, "overload answer, which throttled exists to prevent.")
	fmt.Fprintln(v.w, "\n"+rep.Headline())
}
