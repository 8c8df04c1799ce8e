package bench

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/throttledhq/throttled/internal/overload"
)

// View is the demo's live table (and the rows of bench overload --rows): it
// prints the legend, one line per second and a summary by phase
// whose figures are the sums of the lines. Rows come from overload.Run,
// exact: every request lands in the second it was sent. On a terminal the
// legend stays on top and the last viewScreen seconds are redrawn under it,
// so the demo fits an 80×40 terminal.
type View struct {
	w      io.Writer
	redraw bool
	legend string
	lines  []string // the seconds so far, for redrawing
}

// viewScreen is how many seconds a redrawn screen shows.
const viewScreen = 14

// NewView prints to w; it redraws the screen when w is a terminal, unless
// plain.
func NewView(w io.Writer, plain bool) *View {
	redraw := false
	if f, ok := w.(*os.File); ok && !plain {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			redraw = true
		}
	}
	return &View{w: w, redraw: redraw}
}

// viewLegend says what the columns are, before the first second.
const viewLegend = `One line per second. ×free: the free tier's multiplier. admitted: the share
of the requests of premium, free and the greedy key (grdy) answered 2xx.
Refused requests, by the mechanism that refused them:
  quota  429, the client's own quota (the greedy key sends above it)
  cap    503, the tier's admission cap while its multiplier is cut
  shed   503, a rule's quota scaled down by the multiplier
  gate   503, the inner loop's concurrency limit (lowest priority first)
  bh     503, a bulkhead or an open breaker
  be     503 from the backend itself: the overload throttled exists to prevent
good: goodput (2xx within the latency target) ÷ capacity; p99: of the 2xx.
`

// viewCols lays out a line: label, multiplier, admitted shares, refusals,
// goodput and p99; RowsHeader heads the seconds' lines and the summary's.
const viewCols = "%-11s %5s │ %4s %4s %4s │ %5s %4s %4s %4s %3s %4s │ %4s %5s\n"

var RowsHeader = fmt.Sprintf("%-11s %5s │ %14s │ %28s │\n", "", "", "admitted", "refused") +
	fmt.Sprintf(viewCols, "", "×free", "prem", "free", "grdy", "quota", "cap", "shed", "gate", "bh", "be", "good", "p99")

// Start prints the legend with the addresses and the admin token.
func (v *View) Start(intro, proxy, admin, token string) {
	v.legend = fmt.Sprintf("%sproxy %s   admin and /metrics %s\nadmin token %s, e.g.\n  curl -H 'Authorization: Bearer %s' \\\n    %s/v1/multipliers\n\n%s\n",
		intro, proxy, admin, token, token, admin, viewLegend)
	fmt.Fprint(v.w, v.legend)
	if !v.redraw {
		fmt.Fprint(v.w, RowsHeader)
	}
}

// Row prints one second.
func (v *View) Row(r overload.Row) {
	mult := "-"
	if m, ok := r.Multipliers["free"]; ok {
		mult = fmt.Sprintf("%.2f", m)
	}
	t := r.Total()
	line := viewLine(fmt.Sprintf("%3ds %s", r.Second, phaseLabel(r.Phase)), mult, r.Loads, &t, r.Capacity)
	if !v.redraw {
		fmt.Fprint(v.w, line)
		return
	}
	v.lines = append(v.lines, line)
	fmt.Fprint(v.w, "\033[H\033[2J"+v.legend+RowsHeader)
	for _, l := range v.lines[max(0, len(v.lines)-viewScreen):] {
		fmt.Fprint(v.w, l)
	}
}

// viewLine is one line: loads' admitted shares, the refusals of all loads by
// mechanism, goodput over capacity (seconds of capacity when summing) and
// the 2xx p99 ("-" without a 2xx).
func viewLine(label, mult string, loads map[string]*overload.Counts, t *overload.Counts, capacity float64) string {
	p99 := "-"
	if t.Class[overload.OK] > 0 {
		p99 = fmtLatency(t.Latency.Quantile(0.99))
	}
	n := func(c ...overload.Class) string {
		var s int64
		for _, k := range c {
			s += t.Class[k]
		}
		return strconv.FormatInt(s, 10)
	}
	return fmt.Sprintf(viewCols, label, mult,
		admitted(loads["premium"]), admitted(loads["free"]), admitted(loads["greedy"]),
		n(overload.OverQuota), n(overload.Capped), n(overload.Shed), n(overload.Gated),
		n(overload.Bulkhead, overload.Breaker), n(overload.Backend503),
		fmt.Sprintf("%.2f", float64(t.WithinTarget)/capacity), p99)
}

// admitted is the share of c's requests answered 2xx.
func admitted(c *overload.Counts) string {
	if c == nil || c.Sent() == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(c.Class[overload.OK])/float64(c.Sent()))
}

func fmtLatency(d time.Duration) string {
	if d >= time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dms", d.Milliseconds())
}

// phaseLabel names a phase as the demo's intro does.
func phaseLabel(p overload.Phase) string {
	if p == overload.During {
		return "surge"
	}
	return p.String()
}

// Summary prints each phase's sums of the lines and the whole run's, then
// the bench's headline.
func (v *View) Summary(rep overload.Report) {
	fmt.Fprintf(v.w, "\nsummary, %d s (the sums of the lines above, by phase):\n%s", len(rep.Rows), RowsHeader)
	var phase [overload.NumPhases + 1]map[string]*overload.Counts // the last: the whole run
	var capSec [overload.NumPhases + 1]float64                    // capacity × seconds
	for i := range phase {
		phase[i] = map[string]*overload.Counts{}
	}
	for _, r := range rep.Rows {
		for _, p := range []int{int(r.Phase), int(overload.NumPhases)} {
			capSec[p] += r.Capacity
			for name, c := range r.Loads {
				if phase[p][name] == nil {
					phase[p][name] = &overload.Counts{}
				}
				phase[p][name].Add(c)
			}
		}
	}
	for p := range phase {
		if capSec[p] == 0 {
			continue
		}
		var t overload.Counts
		for _, c := range phase[p] {
			t.Add(c)
		}
		label := "all"
		if p < int(overload.NumPhases) {
			label = phaseLabel(overload.Phase(p))
		}
		fmt.Fprint(v.w, viewLine("     "+label, "", phase[p], &t, capSec[p]))
	}
	fmt.Fprintln(v.w, "\n"+wrap(rep.Headline(), 80))
}

// wrap breaks s into lines of at most width runes at spaces.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, w := range strings.Fields(s) {
		l := utf8.RuneCountInString(w)
		if i > 0 && n+1+l > width {
			b.WriteByte('\n')
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += l
	}
	return b.String()
}
