package bench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// ParsePIDs reads --pids: process ids, comma-separated ("" is none).
func ParsePIDs(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		pid, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || pid < 1 {
			return nil, fmt.Errorf("bench: --pids: %q is not a process id", f)
		}
		out = append(out, pid)
	}
	return out, nil
}

// PrintRLS prints an RLSResult or an ExactResult as a short table.
func PrintRLS(w io.Writer, res any) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	switch r := res.(type) {
	case RLSResult:
		fmt.Fprintf(tw, "callers\t%d (keys %d, %.1f s)\n", r.Concurrency, r.Keys, r.DurationSeconds)
		fmt.Fprintf(tw, "decisions/s\t%.0f\n", r.DecisionsPerSec)
		fmt.Fprintf(tw, "p50 / p99 µs\t%.0f / %.0f\n", r.P50Micros, r.P99Micros)
		fmt.Fprintf(tw, "ok (fallback) / over_limit / errors\t%d (%d) / %d / %d\n", r.OK, r.FallbackOK, r.OverLimit, r.Errors)
		fmt.Fprintf(tw, "service CPU s per 10k decisions\t%.2f\n", r.ServiceCPUPer10k)
		fmt.Fprintf(tw, "Redis CPU µs per decision\t%.1f\n", r.RedisCPUPerDecision)
		fmt.Fprintf(tw, "script calls per decision\t%.3f\n", r.ScriptCallsPerDecision)
		if r.FirstError != "" {
			fmt.Fprintf(tw, "first error\t%s\n", r.FirstError)
		}
	case ExactResult:
		fmt.Fprintf(tw, "key\t%s\n", r.Key)
		fmt.Fprintf(tw, "fired\t%d within %.0f ms\n", r.Fired, r.SpanMs)
		fmt.Fprintf(tw, "ok (fallback) / over_limit / errors\t%d (%d) / %d / %d\n", r.OK, r.FallbackOK, r.OverLimit, r.Errors)
	default:
		return fmt.Errorf("bench: PrintRLS: %T", res)
	}
	return tw.Flush()
}
