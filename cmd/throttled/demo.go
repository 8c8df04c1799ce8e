package main

import (
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// demo drives the in-memory limiter with a free and a premium client over
// simulated seconds, with the service overloaded in the middle (multiplier
// 0.5 for free), and prints what was decided.
func demo(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(w)
	seconds := fs.Int("seconds", 6, "simulated seconds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *seconds < 1 || *seconds > 3600 {
		return fmt.Errorf("demo: --seconds %d must be in 1..3600", *seconds)
	}
	start := time.Now()
	s := limiter.NewMemory()
	tiers := []struct {
		name string
		rule limiter.Rule
		rps  int
	}{
		{"free", limiter.Rule{Name: "per-key", Limit: 10, Period: time.Second, Burst: 10}, 20},
		{"premium", limiter.Rule{Name: "per-key", Limit: 100, Period: time.Second, Burst: 100}, 60},
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "second\ttier\tmultiplier\toffered\tallowed\t429\t503\t")
	for sec := 0; sec < *seconds; sec++ {
		overloaded := sec >= *seconds/3 && sec < 2**seconds/3
		for _, t := range tiers {
			m := 1.0
			if overloaded && t.name == "free" {
				m = 0.5
			}
			var count [3]int
			for i := 0; i < t.rps; i++ {
				now := start.Add(time.Duration(sec)*time.Second + time.Duration(i)*time.Second/time.Duration(t.rps))
				d, err := s.DecideAt(now, limiter.Request{Key: t.name + "-client", Rule: t.rule, Multiplier: m, Tier: t.name})
				if err != nil {
					return err
				}
				count[d.Reason]++
			}
			fmt.Fprintf(tw, "%d\t%s\t%.2f\t%d\t%d\t%d\t%d\t\n", sec, t.name, m, t.rps,
				count[limiter.Allowed], count[limiter.OverQuota], count[limiter.Shed])
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, "\n429 = over the tier's quota; 503 = shed because the multiplier cut the tier's admission rate.")
	return err
}

// script prints the Lua source of one algorithm.
func script(args []string, w io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("script: want one algorithm name, e.g. token_bucket")
	}
	alg, err := limiter.ParseAlgorithm(args[0])
	if err != nil {
		return err
	}
	_, err = io.WriteString(w, limiter.ScriptSource(alg))
	return err
}
