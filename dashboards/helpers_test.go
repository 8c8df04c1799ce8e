package dashboards

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/throttledhq/throttled/internal/testenv"
)

// repoRoot is the repository root, relative to this package (tests run in
// the package directory).
const repoRoot = ".."

// Paths of the files under test, relative to the package directory.
var (
	alertsFile     = "alerts.yml"
	alertTestsFile = "alerts_test.yml"
	composeFile    = filepath.Join(repoRoot, "docker-compose.yml")
	promConfigFile = filepath.Join(repoRoot, "deploy", "prometheus", "prometheus.yml")
	datasourceFile = filepath.Join(repoRoot, "deploy", "grafana", "provisioning", "datasources", "prometheus.yml")
	providerFile   = filepath.Join(repoRoot, "deploy", "grafana", "provisioning", "dashboards", "throttled.yml")
	throttledConf  = filepath.Join(repoRoot, "deploy", "throttled", "config.yaml")
	readmeFile     = filepath.Join(repoRoot, "README.md")
)

// dsRef is a Grafana datasource reference.
type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type target struct {
	Expr       string `json:"expr"`
	RefID      string `json:"refId"`
	Datasource *dsRef `json:"datasource"`
}

type panel struct {
	ID         int      `json:"id"`
	Type       string   `json:"type"`
	Title      string   `json:"title"`
	Datasource *dsRef   `json:"datasource"`
	Targets    []target `json:"targets"`
	GridPos    struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Panels []panel `json:"panels"` // a collapsed row's panels
}

// input is an entry of a dashboard's __inputs: what Grafana's import asks
// for, substituted for ${NAME} throughout the JSON.
type input struct {
	Name     string `json:"name"`
	Type     string `json:"type"`
	PluginID string `json:"pluginId"`
}

// variable is a template variable.
type variable struct {
	Type       string          `json:"type"`
	Name       string          `json:"name"`
	Datasource *dsRef          `json:"datasource"`
	Query      json.RawMessage `json:"query"` // a string, or {"query": "..."}
	Regex      string          `json:"regex"`
	IncludeAll bool            `json:"includeAll"`
	AllValue   string          `json:"allValue"`
	Current    struct {
		Value any `json:"value"`
	} `json:"current"`
}

// queryText is the variable's query whichever form it is saved in.
func (v *variable) queryText() string {
	var s string
	if json.Unmarshal(v.Query, &s) == nil {
		return s
	}
	var o struct{ Query string }
	_ = json.Unmarshal(v.Query, &o)
	return o.Query
}

type dashboard struct {
	file          string
	Inputs        []input `json:"__inputs"`
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

// variable returns the template variable called name, or nil.
func (d *dashboard) variable(name string) *variable {
	for i := range d.Templating.List {
		if d.Templating.List[i].Name == name {
			return &d.Templating.List[i]
		}
	}
	return nil
}

// allPanels flattens rows.
func (d *dashboard) allPanels() []panel {
	var out []panel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// loadDashboards parses every *.json of the package directory.
func loadDashboards(t *testing.T) []dashboard {
	t.Helper()
	files, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no dashboards (*.json) in dashboards/")
	}
	sort.Strings(files)
	var out []dashboard
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := dashboard{file: f}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatalf("%s: not valid dashboard JSON: %v", f, err)
		}
		out = append(out, d)
	}
	return out
}

// query is one PromQL expression and where it comes from.
type query struct {
	where string // "file: panel title / refId" or "alerts.yml: AlertName"
	expr  string
}

// grafanaMacros are the Grafana variables the dashboards may use, with the
// values the tests give them (the test Prometheus scrapes every second):
// the job the test Prometheus scrapes throttled as, and every instance
// (the instance variable's All).
var grafanaMacros = strings.NewReplacer(
	"$__rate_interval", "15s",
	"$__interval", "5s",
	"$__range", "1m",
	"$job", testenv.DefaultJob,
	"$instance", allInstances,
)

// allInstances is the instance variable's value for All (its allValue).
const allInstances = ".*"

// dashboardQueries returns every target's expression with the Grafana
// macros replaced.
func dashboardQueries(t *testing.T) []query {
	t.Helper()
	var out []query
	for _, d := range loadDashboards(t) {
		for _, p := range d.allPanels() {
			for _, tg := range p.Targets {
				out = append(out, query{
					where: d.file + ": " + p.Title + " / " + tg.RefID,
					expr:  grafanaMacros.Replace(tg.Expr),
				})
			}
		}
	}
	return out
}

// panelQuery returns the expression of refID in the panel titled title.
func panelQuery(t *testing.T, title, refID string) string {
	t.Helper()
	for _, d := range loadDashboards(t) {
		for _, p := range d.allPanels() {
			if p.Title != title {
				continue
			}
			for _, tg := range p.Targets {
				if tg.RefID == refID {
					return grafanaMacros.Replace(tg.Expr)
				}
			}
		}
	}
	t.Fatalf("no panel %q with a target %s in the dashboards", title, refID)
	return ""
}

type alertRule struct {
	Alert       string            `yaml:"alert"`
	Record      string            `yaml:"record"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type ruleFile struct {
	Groups []struct {
		Name  string      `yaml:"name"`
		Rules []alertRule `yaml:"rules"`
	} `yaml:"groups"`
}

func loadRules(t *testing.T) []alertRule {
	t.Helper()
	var rf ruleFile
	readYAML(t, alertsFile, &rf)
	var out []alertRule
	for _, g := range rf.Groups {
		out = append(out, g.Rules...)
	}
	if len(out) == 0 {
		t.Fatalf("%s has no rules", alertsFile)
	}
	return out
}

func ruleQueries(t *testing.T) []query {
	t.Helper()
	var out []query
	for _, r := range loadRules(t) {
		out = append(out, query{where: alertsFile + ": " + r.Alert + r.Record, expr: r.Expr})
	}
	return out
}

// throttledConfig is the part of deploy/throttled/config.yaml the tests
// read (package config owns the full schema; its check
// validates the file in TestComposeThrottledConfigChecks).
type throttledConfig struct {
	Listen   string `yaml:"listen"`
	Upstream string `yaml:"upstream"`
	Admin    struct {
		Listen string            `yaml:"listen"`
		Tokens map[string]string `yaml:"tokens"`
	} `yaml:"admin"`
	Redis      struct{ URL string } `yaml:"redis"`
	Prometheus struct {
		URL             string `yaml:"url"`
		LatencyQuery    string `yaml:"latency_query"`
		ErrorRatioQuery string `yaml:"error_ratio_query"`
		SaturationQuery string `yaml:"saturation_query"`
	} `yaml:"prometheus"`
}

// configQueries are the PromQL queries of the compose controller config.
func configQueries(t *testing.T) []query {
	t.Helper()
	var c throttledConfig
	readYAML(t, throttledConf, &c)
	var out []query
	for name, q := range map[string]string{"latency_query": c.Prometheus.LatencyQuery,
		"error_ratio_query": c.Prometheus.ErrorRatioQuery, "saturation_query": c.Prometheus.SaturationQuery} {
		if q != "" {
			out = append(out, query{where: throttledConf + ": prometheus." + name, expr: q})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].where < out[j].where })
	return out
}

// readYAML decodes a YAML file into v, failing the test on any error.
func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
