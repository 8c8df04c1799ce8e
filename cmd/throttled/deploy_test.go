package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/throttledhq/throttled/config"
)

// The deployment files, relative to this package.
var (
	repoRoot      = filepath.Join("..", "..")
	k8sFile       = filepath.Join(repoRoot, "deploy", "kubernetes", "throttled.yaml")
	composeFile   = filepath.Join(repoRoot, "docker-compose.yml")
	composeConfig = filepath.Join(repoRoot, "deploy", "throttled", "config.yaml")
	dockerfiles   = []string{filepath.Join(repoRoot, "Dockerfile"), filepath.Join(repoRoot, "deploy", "loadgen", "Dockerfile")}
)

// digestRef is an image reference pinned by digest, with the tag kept for
// people: name:tag@sha256:<64 hex>.
var digestRef = regexp.MustCompile(`^[a-z0-9./_-]+(:[A-Za-z0-9._-]+)@sha256:[0-9a-f]{64}$`)

// imageProblem says what is wrong with an image reference ("" when
// nothing): an image needs a tag that is not latest, and a digest unless
// the operator builds it (local, or an example registry to replace).
func imageProblem(ref string, mayBeUnpinned bool) string {
	name, _, _ := strings.Cut(ref, "@")
	tag := ""
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		tag = name[i+1:]
	}
	switch {
	case tag == "" || tag == "latest":
		return "no tag or :latest: the image can change under the same name"
	case mayBeUnpinned:
		return ""
	case !digestRef.MatchString(ref):
		return "not pinned by digest (name:tag@sha256:...)"
	}
	return ""
}

// port is the port of a host:port listen address.
func port(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// yamlDocs decodes every document of a multi-document YAML file into T.
func yamlDocs[T any](t *testing.T, path string) []T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	var out []T
	for {
		var v T
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %s", path, yaml.FormatError(err, false, true))
		}
		out = append(out, v)
	}
}

// TestDockerfilesPinned: every FROM of the Dockerfiles is pinned by digest;
// the image runs `throttled healthcheck` as its HEALTHCHECK against the
// admin port of the compose configuration; VERSION reaches main.version.
func TestDockerfilesPinned(t *testing.T) {
	cfg, err := config.LoadEnv(composeConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range dockerfiles {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		froms := 0
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 2 || f[0] != "FROM" {
				continue
			}
			froms++
			if p := imageProblem(f[1], false); p != "" {
				t.Errorf("%s: FROM %s: %s", path, f[1], p)
			}
		}
		if froms == 0 {
			t.Errorf("%s: no FROM line", path)
		}
	}
	df, _ := os.ReadFile(dockerfiles[0])
	want := `"healthcheck", "--quiet", "--url", "http://127.0.0.1:` + strconv.Itoa(port(t, cfg.Admin.Listen)) + `/readyz"`
	if !bytes.Contains(df, []byte("HEALTHCHECK")) || !bytes.Contains(df, []byte(want)) {
		t.Errorf("Dockerfile: want a HEALTHCHECK running throttled %s", want)
	}
	if !bytes.Contains(df, []byte("ARG VERSION")) || !bytes.Contains(df, []byte("-X main.version=${VERSION}")) {
		t.Error("Dockerfile: want ARG VERSION passed to -ldflags -X main.version=${VERSION}")
	}
}

// composeFileModel is what TestComposeSafeDefaults reads of
// docker-compose.yml (dashboards/compose_test.go reads it strictly).
type composeFileModel struct {
	Services map[string]struct {
		Image string `yaml:"image"`
		Build *struct {
			Context string            `yaml:"context"`
			Args    map[string]string `yaml:"args"`
		} `yaml:"build"`
		Ports       []string `yaml:"ports"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		DependsOn any `yaml:"depends_on"` // a list, or a map with conditions
	} `yaml:"services"`
}

// TestComposeSafeDefaults: no :latest and pulled images pinned by digest;
// the admin API, Prometheus and Grafana published on 127.0.0.1 only;
// throttled's healthcheck is `throttled healthcheck` on its admin port and
// the one-shot seed waits for it; VERSION is passed as a build argument.
func TestComposeSafeDefaults(t *testing.T) {
	docs := yamlDocs[composeFileModel](t, composeFile)
	if len(docs) != 1 {
		t.Fatalf("%s: %d documents, want 1", composeFile, len(docs))
	}
	c := docs[0]
	cfg, err := config.LoadEnv(composeConfig, nil)
	if err != nil {
		t.Fatal(err)
	}
	admin := strconv.Itoa(port(t, cfg.Admin.Listen))
	private := map[string]string{"throttled": admin, "prometheus": "9090", "grafana": "3000"}
	for name, s := range c.Services {
		if p := imageProblem(s.Image, s.Build != nil); s.Image != "" && p != "" {
			t.Errorf("service %s: image %s: %s", name, s.Image, p)
		}
		for _, p := range s.Ports {
			parts := strings.Split(strings.TrimSuffix(p, "/tcp"), ":")
			if parts[len(parts)-1] == private[name] && (len(parts) != 3 || parts[0] != "127.0.0.1") {
				t.Errorf("service %s: ports %q publishes its admin/UI port off loopback; want 127.0.0.1:HOST:%s", name, p, private[name])
			}
		}
	}
	th := c.Services["throttled"]
	if th.Build == nil || !strings.HasPrefix(th.Build.Args["VERSION"], "${VERSION") {
		t.Errorf("throttled: want build.args VERSION: ${VERSION...} (got %+v)", th.Build)
	}
	if th.Healthcheck == nil || !slices.Contains(th.Healthcheck.Test, "healthcheck") ||
		!slices.Contains(th.Healthcheck.Test, "http://127.0.0.1:"+admin+"/readyz") {
		t.Errorf("throttled: healthcheck %+v, want throttled healthcheck --url http://127.0.0.1:%s/readyz", th.Healthcheck, admin)
	}
	dep, _ := c.Services["seed"].DependsOn.(map[string]any)
	if th, _ := dep["throttled"].(map[string]any); th["condition"] != "service_healthy" {
		t.Error("seed: want depends_on throttled with condition service_healthy")
	}
}
