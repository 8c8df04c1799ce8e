package admin

import (
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

type openAPIDoc struct {
	OpenAPI    string                                `json:"openapi"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components map[string]map[string]json.RawMessage `json:"components"`
}

var httpMethods = map[string]bool{"get": true, "put": true, "post": true, "delete": true, "patch": true, "head": true, "options": true}

// Every registered route is in admin/openapi.json and every operation there
// is a registered route.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	var doc openAPIDoc
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatalf("openapi.json: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi %q, want 3.x", doc.OpenAPI)
	}
	var documented []string
	for p, item := range doc.Paths {
		for m := range item {
			if httpMethods[m] {
				documented = append(documented, strings.ToUpper(m)+" "+p)
			}
		}
	}
	srv, err := New(t.Context(), Settings{Tokens: testTokens()})
	if err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`:([A-Za-z0-9_]+)`)
	var registered []string
	for _, r := range srv.Echo().Routes() {
		if r.Method == echo.RouteNotFound || strings.Contains(r.Name, "methodNotAllowed") { // the group's catch-all, so 404s pass its auth; the 405s
			continue
		}
		registered = append(registered, r.Method+" "+param.ReplaceAllString(r.Path, "{$1}"))
	}
	sort.Strings(documented)
	sort.Strings(registered)
	if strings.Join(documented, "\n") != strings.Join(registered, "\n") {
		t.Fatalf("routes and openapi.json differ:\nregistered:\n  %s\ndocumented:\n  %s",
			strings.Join(registered, "\n  "), strings.Join(documented, "\n  "))
	}
	if len(registered) != 19 {
		t.Fatalf("%d routes", len(registered))
	}
}

// Every $ref points at a component that exists, and every path template
// parameter is declared.
func TestOpenAPIRefs(t *testing.T) {
	var doc openAPIDoc
	if err := json.Unmarshal(openAPI, &doc); err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`"\$ref": "#/components/([^/]+)/([^"]+)"`).FindAllStringSubmatch(string(openAPI), -1) {
		if _, ok := doc.Components[m[1]][m[2]]; !ok {
			t.Errorf("dangling $ref %s/%s", m[1], m[2])
		}
	}
	for p, item := range doc.Paths {
		for _, name := range regexp.MustCompile(`\{([^}]+)\}`).FindAllStringSubmatch(p, -1) {
			if !strings.Contains(string(item["parameters"]), `"name": "`+name[1]+`"`) {
				t.Errorf("%s: path parameter %s not declared", p, name[1])
			}
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	f := newFixture(t)
	r := f.do("GET", "/v1/openapi.json", readTok, nil)
	want(t, r, 200)
	file, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(r.body) != string(file) || r.hdr.Get("Content-Type") != "application/json" || string(OpenAPI()) != string(file) {
		t.Fatalf("served %d bytes (%s), file has %d", len(r.body), r.hdr.Get("Content-Type"), len(file))
	}
}
