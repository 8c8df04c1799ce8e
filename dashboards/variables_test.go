package dashboards

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// The dashboards are in Grafana's export format, so they import into any
// Grafana (the import asks for dsInput) and are file-provisioned as they
// are: every panel queries the datasource variable, whose saved value is
// the import's choice.
const (
	dsInput = "DS_PROMETHEUS"         // the __inputs entry
	dsVar   = "${datasource}"         // what panels and variables query
	jobSel  = `job=~"$job"`           // every selector's job matcher
	instSel = `instance=~"$instance"` // and its instance matcher
)

// checkImport checks __inputs: one Prometheus datasource input, dsInput.
func checkImport(d dashboard) []error {
	if len(d.Inputs) != 1 || d.Inputs[0] != (input{Name: dsInput, Type: "datasource", PluginID: "prometheus"}) {
		return []error{fmt.Errorf("__inputs %+v: want one datasource input %s of plugin prometheus", d.Inputs, dsInput)}
	}
	return nil
}

var (
	jobQuery      = regexp.MustCompile(`^label_values\((throttled_[a-z0-9_]+), job\)$`)
	instanceQuery = regexp.MustCompile(`^label_values\((throttled_[a-z0-9_]+)\{job=~"\$job"\}, instance\)$`)
)

// checkVariables checks the template variables: datasource (prometheus
// datasources, saved on the import's choice), job and instance (label
// values of a product metric on that datasource; instance within $job,
// All matching every instance), and no other.
func checkVariables(d dashboard) []error {
	var errs []error
	fail := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	want := map[string]func(v *variable){
		"datasource": func(v *variable) {
			if v.Type != "datasource" || v.queryText() != "prometheus" || v.Regex != "" {
				fail("variable datasource: want type datasource, query prometheus, no regex; got %+v", *v)
			}
			if c := v.Current.Value; c != nil && c != "${"+dsInput+"}" {
				fail("variable datasource: current %v: want ${%s} (the import's choice)", c, dsInput)
			}
		},
		"job":      func(v *variable) { errs = append(errs, checkQueryVariable(v, jobQuery)...) },
		"instance": func(v *variable) { errs = append(errs, checkQueryVariable(v, instanceQuery)...) },
	}
	for i := range d.Templating.List {
		v := &d.Templating.List[i]
		check, ok := want[v.Name]
		if !ok {
			fail("variable %q: the live PromQL test does not know it; extend grafanaMacros first", v.Name)
			continue
		}
		check(v)
		delete(want, v.Name)
	}
	for name := range want {
		fail("no %s variable", name)
	}
	return errs
}

func checkQueryVariable(v *variable, query *regexp.Regexp) []error {
	var errs []error
	fail := func(format string, a ...any) {
		errs = append(errs, fmt.Errorf("variable %s: "+format, append([]any{v.Name}, a...)...))
	}
	if v.Type != "query" {
		fail("type %q: want query", v.Type)
	}
	if v.Datasource == nil || *v.Datasource != (dsRef{"prometheus", dsVar}) {
		fail("datasource %+v: want {prometheus %s}", v.Datasource, dsVar)
	}
	m := query.FindStringSubmatch(v.queryText())
	switch {
	case m == nil:
		fail("query %q does not match %s", v.queryText(), query)
	case len(unknownMetrics(m[1])) > 0:
		fail("query %q: throttled does not export %s", v.queryText(), m[1])
	}
	if v.Name == "instance" && (!v.IncludeAll || v.AllValue != allInstances) {
		fail("want All, as %q (every instance of $job, also those without the variable's metric)", allInstances)
	}
	return errs
}

var (
	selectorOf = regexp.MustCompile(`\bthrottled_[a-z0-9_]+(\{[^{}]*\})?`)
	anySel     = regexp.MustCompile(`\{[^{}]*\}`)
)

// selectorErrors lists the series selectors of expr that do not narrow to
// $job and $instance: a product metric without braces, or braces without
// both matchers.
func selectorErrors(expr string) []string {
	var out []string
	for _, m := range selectorOf.FindAllStringSubmatch(expr, -1) {
		if m[1] == "" {
			out = append(out, m[0])
		}
	}
	for _, s := range anySel.FindAllString(expr, -1) {
		if !strings.Contains(s, jobSel) || !strings.Contains(s, instSel) {
			out = append(out, s)
		}
	}
	return out
}

func TestSelectorErrorsAreCaught(t *testing.T) {
	for expr, want := range map[string]string{
		`sum(rate(throttled_decisions_total{job=~"$job", instance=~"$instance"}[1m]))`:                        "",
		`max(throttled_fallback_active{instance=~"$instance", tier="x", job=~"$job"})`:                        "",
		`sum(rate(throttled_decisions_total[1m]))`:                                                            "throttled_decisions_total",
		`max(throttled_fallback_active{job=~"$job"})`:                                                         `{job=~"$job"}`,
		`max(throttled_fallback_active{instance=~"$instance"})`:                                               `{instance=~"$instance"}`,
		`max(throttled_fallback_active{job="throttled", instance=~"$instance"})`:                              `{job="throttled", instance=~"$instance"}`,
		`a{job=~"$job", instance=~"$instance"} / throttled_fallback_active`:                                   "throttled_fallback_active",
		`throttled_breaker_state{job=~"$job", instance=~"$instance"} * on (job) up{job=~"$job"}`:              `{job=~"$job"}`,
		`sum(throttled_top_consumers{job=~"$job", instance=~"$instance"}) or throttled_top_consumers{job=""}`: `{job=""}`,
	} {
		if got := strings.Join(selectorErrors(expr), ","); got != want {
			t.Errorf("selectorErrors(%q) = %q, want %q", expr, got, want)
		}
	}
}

// TestProvisionedDatasourceBacksTheVariable: the provisioned dashboards
// carry the import placeholder ${DS_PROMETHEUS} as their datasource
// variable's value, which no datasource has; Grafana then selects the
// variable's first option, or the default datasource. The provisioning
// makes both the one Prometheus datasource, so every panel queries it.
func TestProvisionedDatasourceBacksTheVariable(t *testing.T) {
	var f struct {
		APIVersion  int `yaml:"apiVersion"`
		Datasources []struct {
			Name, Type, UID, URL string
			IsDefault            bool `yaml:"isDefault"`
		} `yaml:"datasources"`
	}
	readYAML(t, datasourceFile, &f)
	if f.APIVersion != 1 || len(f.Datasources) != 1 {
		t.Fatalf("%s: want apiVersion 1 and one datasource, got %+v", datasourceFile, f)
	}
	ds := f.Datasources[0]
	if ds.Type != "prometheus" || ds.UID == "" || ds.Name == "" || ds.URL == "" || !ds.IsDefault {
		t.Fatalf("%s: want the default prometheus datasource, named, with a uid and url; got %+v", datasourceFile, ds)
	}
	for _, d := range loadDashboards(t) {
		v := d.variable("datasource")
		if v == nil || v.Type != "datasource" || v.queryText() != ds.Type || v.Regex != "" {
			t.Errorf("%s: datasource variable %+v does not list every %s datasource", d.file, v, ds.Type)
		}
	}
}
