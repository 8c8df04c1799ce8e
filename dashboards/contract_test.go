package dashboards

import (
	"context"
	"go/scanner"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// The contract, productMetrics, is kept honest from three sides: the Go
// source (every throttled_* name a non-test file spells out, including the
// metrics that need a config the live test does not run: the Envoy rate
// limit service, Redis memory policy, ...), the live run (every throttled_*
// name a running throttled exports, which also catches names the code
// builds from parts) and the dashboards and rules (every name in the
// contract is shown by a panel or an alert, or listed in notShown).

// notShown are the product metrics that no panel or alert shows on
// purpose, each with the reason. Today every metric is shown: keep this
// map small, and give a reason an operator would accept.
var notShown = map[string]string{}

// metricLiteral is a Go string literal that is a whole metric name; one
// ending in "_" is the prefix of names the code builds from parts.
var metricLiteral = regexp.MustCompile(`^throttled_[a-z0-9_]*$`)

// sourceMetrics returns the throttled_* string literals of the non-test Go
// files under root: whole names, and prefixes (ending in "_") of names
// built from parts.
func sourceMetrics(root string) (names, prefixes map[string]bool, err error) {
	names, prefixes = map[string]bool{}, map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		return literals(path, func(s string) {
			switch {
			case !metricLiteral.MatchString(s):
			case strings.HasSuffix(s, "_"):
				prefixes[s] = true
			default:
				names[s] = true
			}
		})
	})
	return names, prefixes, err
}

// literals calls f with every string literal of the Go file at path.
func literals(path string, f func(string)) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	fset := token.NewFileSet()
	var s scanner.Scanner
	var errs scanner.ErrorList
	s.Init(fset.AddFile(path, -1, len(src)), src, errs.Add, 0)
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			return errs.Err()
		}
		if tok == token.STRING {
			if v, err := strconv.Unquote(lit); err == nil {
				f(v)
			}
		}
	}
}

// outsideContract lists the names (histogram series reduced to their
// histogram) that contract does not hold, sorted.
func outsideContract(names []string, contract map[string]bool) []string {
	var out []string
	for _, n := range names {
		if !contract[histogramOf(n)] && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// histogramOf is the histogram a _bucket, _sum or _count series belongs
// to, or name itself.
func histogramOf(name string) string {
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(name, suf); ok && histograms[b] {
			return b
		}
	}
	return name
}

// notInSource lists the contract's names that neither appear in the source
// nor start with one of its prefixes: renamed or removed metrics.
func notInSource(contract, names, prefixes map[string]bool) []string {
	var out []string
	for m := range contract {
		if !names[m] && !hasPrefix(m, prefixes) {
			out = append(out, m)
		}
	}
	slices.Sort(out)
	return out
}

func hasPrefix(s string, prefixes map[string]bool) bool {
	for p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// unshown lists what is wrong with how exprs show contract: a metric no
// expr mentions and hidden does not list, a hidden metric outside the
// contract or shown after all (its reason is stale).
func unshown(contract map[string]bool, exprs []string, hidden map[string]string) []string {
	shown := map[string]bool{}
	for _, e := range exprs {
		for _, m := range metricName.FindAllString(e, -1) {
			shown[histogramOf(m)] = true
		}
	}
	var out []string
	for m := range contract {
		if _, ok := hidden[m]; !ok && !shown[m] {
			out = append(out, m+": no panel or alert shows it")
		}
	}
	for m, why := range hidden {
		switch {
		case !contract[m]:
			out = append(out, m+": in notShown but not a product metric")
		case shown[m]:
			out = append(out, m+": in notShown but shown")
		case strings.TrimSpace(why) == "":
			out = append(out, m+": in notShown without a reason")
		}
	}
	slices.Sort(out)
	return out
}

// TestSourceMetricsAreInTheContract: every metric name the product code
// spells out is in productMetrics (also those only a config the live test
// does not run exports), and every productMetrics entry is still in the
// code.
func TestSourceMetricsAreInTheContract(t *testing.T) {
	names, prefixes, err := sourceMetrics(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) == 0 {
		t.Fatalf("no throttled_* names in the Go source under %s", repoRoot)
	}
	for _, m := range outsideContract(slices.Sorted(maps.Keys(names)), productMetrics) {
		t.Errorf("%s: the code names it but productMetrics does not list it: add it, and a panel or alert", m)
	}
	for _, m := range notInSource(productMetrics, names, prefixes) {
		t.Errorf("%s: in productMetrics but the code no longer names it", m)
	}
}

// TestEveryProductMetricIsShown: a panel query or alert rule mentions
// every product metric, or notShown says why not.
func TestEveryProductMetricIsShown(t *testing.T) {
	var exprs []string
	for _, q := range slices.Concat(dashboardQueries(t), ruleQueries(t)) {
		exprs = append(exprs, q.expr)
	}
	for _, e := range unshown(productMetrics, exprs, notShown) {
		t.Error(e)
	}
}

// TestContractGapsAreCaught feeds the checks a source tree, a contract
// and dashboards with one gap each.
func TestContractGapsAreCaught(t *testing.T) {
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("m.go", "package m\n\n// \"throttled_comment_total\" is no name.\nconst a, b = \"throttled_a_total\", `throttled_b_seconds`\n"+
		"var c = \"throttled_c_\" + \"x\"\nvar d = \"not throttled_d\"\n")
	write("m_test.go", "package m\n\nconst t = \"throttled_test_only\"\n")
	names, prefixes, err := sourceMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(slices.Sorted(maps.Keys(names)), ","), "throttled_a_total,throttled_b_seconds"; got != want {
		t.Errorf("source names %q, want %q", got, want)
	}
	if got, want := strings.Join(slices.Sorted(maps.Keys(prefixes)), ","), "throttled_c_"; got != want {
		t.Errorf("source prefixes %q, want %q", got, want)
	}
	contract := map[string]bool{"throttled_a_total": true, "throttled_c_x": true, "throttled_gone": true}
	check := func(what string, got []string, want string) {
		t.Helper()
		if g := strings.Join(got, ","); g != want {
			t.Errorf("%s: %q, want %q", what, g, want)
		}
	}
	check("outside the contract", outsideContract(slices.Sorted(maps.Keys(names)), contract), "throttled_b_seconds")
	check("outside the contract (live, histogram)", outsideContract([]string{"throttled_a_total",
		"throttled_decision_duration_seconds_bucket", "throttled_decision_duration_seconds_bucket", "throttled_x_bucket"},
		map[string]bool{"throttled_a_total": true, "throttled_decision_duration_seconds": true}), "throttled_x_bucket")
	check("not in the source", notInSource(contract, names, prefixes), "throttled_gone")
	exprs := []string{`sum(rate(throttled_a_total[1m]))`, `histogram_quantile(0.9, rate(throttled_decision_duration_seconds_bucket[1m]))`}
	contract["throttled_decision_duration_seconds"] = true
	check("unshown", unshown(contract, exprs, map[string]string{"throttled_c_x": "why"}), "throttled_gone: no panel or alert shows it")
	check("unshown, stale notShown", unshown(contract, exprs, map[string]string{"throttled_c_x": "why", "throttled_gone": "why",
		"throttled_a_total": "shown", "throttled_z": "not product"}),
		"throttled_a_total: in notShown but shown,throttled_z: in notShown but not a product metric")
	check("unshown, no reason", unshown(contract, exprs, map[string]string{"throttled_c_x": " ", "throttled_gone": "why"}),
		"throttled_c_x: in notShown without a reason")
}

// checkExported requires every throttled_* metric the Prometheus of the
// live run scraped to be in productMetrics.
func checkExported(t *testing.T, api v1.API) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	vals, _, _, err := api.LabelValues(ctx, "__name__", []string{`{__name__=~"throttled_.*"}`}, time.Now().Add(-time.Hour), time.Now())
	if err != nil {
		t.Fatalf("exported metric names: %v", err)
	}
	var names []string
	for _, v := range vals {
		names = append(names, string(v))
	}
	t.Logf("throttled exports %d throttled_* series names", len(names))
	for _, m := range outsideContract(names, productMetrics) {
		t.Errorf("%s: a running throttled exports it but productMetrics does not list it", m)
	}
}
