package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/throttledhq/throttled/internal/bench"
	"github.com/throttledhq/throttled/internal/overload"
)

// smallBackend is the demo's backend scaled down to 50 req/s, so that the
// test measures control and not the CPU of a machine that runs other tests
// under -race beside it.
var smallBackend = overload.BackendSettings{Workers: 2, ServiceTime: 40 * time.Millisecond}

// TestDemo runs the demo briefly on embedded defaults: the legend and the
// admin token first, then a line per second, free shed (503) during the
// surge, the greedy key's 429s, every line within 80 columns, and a summary
// whose figures by phase are the sums of the lines, ending with the bench's
// headline.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	rep, err := runDemo(context.Background(), demoFlags{duration: 9 * time.Second, plain: true, backend: smallBackend}, &out)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if rep.Phases.During.Status.Shed == 0 {
		t.Fatalf("nothing shed during the surge\n%s", text)
	}
	// The greedy key, above its quota, gets 429s whichever loop sheds.
	if g := rep.Totals["greedy"]; g.Class[overload.OverQuota] == 0 {
		t.Fatalf("the greedy key never got a 429\n%s", text)
	}
	legend, first := strings.Index(text, "quota  429"), strings.Index(text, "  0s before")
	if legend < 0 || first < legend || !strings.Contains(text[:first], "admin token "+bench.AdminToken) {
		t.Fatalf("the legend and the admin token do not come before the first second:\n%s", text)
	}
	for l := range strings.Lines(text) {
		if n := utf8.RuneCountInString(strings.TrimRight(l, "\n")); n > 80 {
			t.Errorf("%d columns: %q", n, l)
		}
	}
	if !strings.Contains(text, "surge/controller: premium admitted") {
		t.Fatalf("no headline:\n%s", text)
	}
	lines, summary := demoRefusals(t, text)
	if len(lines) != 3 || len(summary) != 4 {
		t.Fatalf("phases in lines %v, in the summary %v:\n%s", lines, summary, text)
	}
	var all [6]int64
	for ph, sums := range lines {
		if summary[ph] != sums {
			t.Errorf("%s: the summary says %v, its lines sum to %v", ph, summary[ph], sums)
		}
		for i, v := range sums {
			all[i] += v
		}
	}
	if summary["all"] != all {
		t.Errorf("all: the summary says %v, the lines sum to %v", summary["all"], all)
	}
}

// demoRow matches a line's label and its refusal columns (quota, cap, shed,
// gate, bh, be); the summary's lines have no second.
var demoRow = regexp.MustCompile(`^\s*(\d+s )?(before|surge|after|all)\s.*│.*│\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*│`)

// demoRefusals sums the seconds' refusal columns by phase, and reads the
// summary's.
func demoRefusals(t *testing.T, text string) (lines, summary map[string][6]int64) {
	lines, summary = map[string][6]int64{}, map[string][6]int64{}
	for l := range strings.Lines(text) {
		m := demoRow.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		into := summary
		if m[1] != "" {
			into = lines
		}
		sums := into[m[2]]
		for i := range sums {
			v, err := strconv.ParseInt(m[3+i], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			sums[i] += v
		}
		into[m[2]] = sums
	}
	return lines, summary
}
