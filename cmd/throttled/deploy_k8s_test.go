package main

import (
	"fmt"
	"maps"
	"path"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
)

// k8sObject is what the test reads of a Kubernetes object in
// deploy/kubernetes (one struct for the kinds used there).
type k8sObject struct {
	Kind     string `yaml:"kind"`
	Metadata struct {
		Name   string            `yaml:"name"`
		Labels map[string]string `yaml:"labels"`
	} `yaml:"metadata"`
	Data map[string]string `yaml:"data"`
	Spec struct {
		// Service: the labels; Deployment, ServiceMonitor: {matchLabels}.
		Selector map[string]any `yaml:"selector"`
		Template struct {
			Metadata struct {
				Labels map[string]string `yaml:"labels"`
			} `yaml:"metadata"`
			Spec struct {
				Containers []k8sContainer `yaml:"containers"`
			} `yaml:"spec"`
		} `yaml:"template"`
		Ports []struct {
			Name       string `yaml:"name"`
			TargetPort any    `yaml:"targetPort"`
		} `yaml:"ports"`
		Endpoints []struct {
			Port string `yaml:"port"`
			Path string `yaml:"path"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

type k8sContainer struct {
	Name  string   `yaml:"name"`
	Image string   `yaml:"image"`
	Args  []string `yaml:"args"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	ReadinessProbe *k8sProbe `yaml:"readinessProbe"`
	LivenessProbe  *k8sProbe `yaml:"livenessProbe"`
	VolumeMounts   []struct {
		MountPath string `yaml:"mountPath"`
	} `yaml:"volumeMounts"`
}

type k8sProbe struct {
	HTTPGet *struct {
		Path string `yaml:"path"`
		Port any    `yaml:"port"` // a name or a number
	} `yaml:"httpGet"`
}

// containerPort resolves a port given by name or number to its number in c.
func (c *k8sContainer) containerPort(p any) int {
	for _, cp := range c.Ports {
		if cp.Name == fmt.Sprint(p) || fmt.Sprint(cp.ContainerPort) == fmt.Sprint(p) {
			return cp.ContainerPort
		}
	}
	return 0
}

// matchLabels is a selector's labels: the Service form or {matchLabels}.
func matchLabels(sel map[string]any) map[string]string {
	if m, ok := sel["matchLabels"].(map[string]any); ok {
		sel = m
	}
	out := map[string]string{}
	for k, v := range sel {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// selects reports whether every label of sel is in labels (and sel is not empty).
func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return len(sel) > 0
}

// k8sExample is the parsed example, by kind.
type k8sExample struct {
	cfg                  *config.Config
	deploy, svc, monitor *k8sObject
	throttled            *k8sContainer
	adminPort, proxyPort int
	containers           []k8sContainer
	configSource         string
}

func loadK8sExample(t *testing.T) *k8sExample {
	t.Helper()
	var e k8sExample
	for _, o := range yamlDocs[k8sObject](t, k8sFile) {
		switch o.Kind {
		case "ConfigMap":
			e.configSource = o.Data["config.yaml"]
		case "Deployment":
			e.deploy = &o
		case "Service":
			e.svc = &o
		case "ServiceMonitor":
			e.monitor = &o
		}
	}
	if e.configSource == "" || e.deploy == nil || e.svc == nil || e.monitor == nil {
		t.Fatalf("%s: want a ConfigMap with config.yaml, a Deployment, a Service and a ServiceMonitor", k8sFile)
	}
	var err error
	if e.cfg, err = config.Parse([]byte(e.configSource), nil); err != nil {
		t.Fatalf("%s: ConfigMap config.yaml: %v", k8sFile, err)
	}
	e.adminPort, e.proxyPort = port(t, e.cfg.Admin.Listen), port(t, e.cfg.Listen)
	e.containers = e.deploy.Spec.Template.Spec.Containers
	for i := range e.containers {
		if e.containers[i].Name == "throttled" {
			e.throttled = &e.containers[i]
		}
	}
	if e.throttled == nil {
		t.Fatalf("%s: no container named throttled in the Deployment", k8sFile)
	}
	return &e
}

// TestK8sExample: the probes of the sidecar hit /readyz and /healthz on the
// config's admin port, the proxy port is declared, the config file is where
// the ConfigMap is mounted, the Service selects the pods and targets real
// ports, the ServiceMonitor scrapes /metrics on the admin port, and no
// image is :latest (pulled ones are pinned by digest).
func TestK8sExample(t *testing.T) {
	e := loadK8sExample(t)
	th := e.throttled
	for name, pr := range map[string]*k8sProbe{"/readyz": th.ReadinessProbe, "/healthz": th.LivenessProbe} {
		if pr == nil || pr.HTTPGet == nil {
			t.Errorf("throttled: no httpGet probe for %s", name)
		} else if pr.HTTPGet.Path != name || th.containerPort(pr.HTTPGet.Port) != e.adminPort {
			t.Errorf("throttled probe for %s: httpGet %s on port %v, want %s on the admin port %d",
				name, pr.HTTPGet.Path, pr.HTTPGet.Port, name, e.adminPort)
		}
	}
	if th.containerPort("http") != e.proxyPort {
		t.Errorf("throttled: container port http is not the proxy's listen port %d", e.proxyPort)
	}
	cfgArg := ""
	for i, a := range th.Args {
		if a == "--config" && i+1 < len(th.Args) {
			cfgArg = th.Args[i+1]
		}
	}
	mounted := false
	for _, m := range th.VolumeMounts {
		mounted = mounted || cfgArg == path.Join(m.MountPath, "config.yaml")
	}
	if !mounted {
		t.Errorf("throttled: --config %q is not config.yaml in a mounted volume", cfgArg)
	}
	for _, c := range e.containers {
		unpinned := strings.HasPrefix(c.Image, "registry.example.com/") // yours to build and pin
		if p := imageProblem(c.Image, unpinned); p != "" {
			t.Errorf("container %s: image %s: %s", c.Name, c.Image, p)
		}
	}
	pods := e.deploy.Spec.Template.Metadata.Labels
	if !selects(matchLabels(e.deploy.Spec.Selector), pods) || !selects(matchLabels(e.svc.Spec.Selector), pods) {
		t.Errorf("the Deployment's or the Service's selector does not select the pods (labels %v)", pods)
	}
	svcPorts := map[string]int{}
	for _, p := range e.svc.Spec.Ports {
		if svcPorts[p.Name] = th.containerPort(p.TargetPort); svcPorts[p.Name] == 0 {
			t.Errorf("Service port %s: targetPort %v is not a port of the throttled container", p.Name, p.TargetPort)
		}
	}
	if !selects(matchLabels(e.monitor.Spec.Selector), e.svc.Metadata.Labels) {
		t.Errorf("the ServiceMonitor does not select the Service (labels %v)", e.svc.Metadata.Labels)
	}
	if ep := e.monitor.Spec.Endpoints; len(ep) != 1 || svcPorts[ep[0].Port] != e.adminPort || ep[0].Path != "/metrics" {
		t.Errorf("ServiceMonitor endpoints %+v, want /metrics on the Service port of the admin listener (%d); service ports %v",
			ep, e.adminPort, maps.Collect(maps.All(svcPorts)))
	}
}

// TestK8sExampleServes runs the example's configuration (listeners moved
// to free loopback ports, no Redis, no Prometheus) and GETs what the probes
// and the ServiceMonitor GET: each answers 200.
func TestK8sExampleServes(t *testing.T) {
	e := loadK8sExample(t)
	up := testenv.Upstream(t)
	cfg, err := config.Parse([]byte(e.configSource), []string{"THROTTLED_LISTEN=127.0.0.1:0",
		"THROTTLED_ADMIN_LISTEN=127.0.0.1:0", "THROTTLED_UPSTREAM=" + up.URL, "THROTTLED_REDIS_URL=",
		"THROTTLED_PROMETHEUS_URL="})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Admin.Tokens = map[string]string{"write": testenv.WriteToken} // the Secret's THROTTLED_ADMIN_TOKEN_OPS
	admin := "http://" + startServe(t, cfg)["admin"]
	paths := []string{e.throttled.ReadinessProbe.HTTPGet.Path, e.throttled.LivenessProbe.HTTPGet.Path}
	for _, ep := range e.monitor.Spec.Endpoints {
		paths = append(paths, ep.Path)
	}
	for _, p := range paths {
		if resp, body := testenv.Call(t, "GET", admin+p, ""); resp.StatusCode != 200 {
			t.Errorf("GET %s: %d %s, want 200", p, resp.StatusCode, body)
		}
	}
}
