package rls_test

import (
	"os"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ratelimit/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"github.com/goccy/go-yaml"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// TestReadmeEnvoyConfig: the README's Envoy snippet is an Envoy bootstrap
// that go-control-plane's types read strictly (no unknown field, every
// typed_config known) and whose validation rules hold, down to the HTTP
// filters.
func TestReadmeEnvoyConfig(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "## Rate limiting as a service")
	_, rest, ok2 := strings.Cut(rest, "```yaml\nstatic_resources:")
	snippet, _, ok3 := strings.Cut(rest, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README: no Envoy snippet (```yaml static_resources:) in Rate limiting as a service")
	}
	js, err := yaml.YAMLToJSON([]byte("static_resources:" + snippet))
	if err != nil {
		t.Fatal(err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(js, &b); err != nil {
		t.Fatalf("README Envoy snippet: %v", err)
	}
	if err := b.ValidateAll(); err != nil {
		t.Fatalf("README Envoy snippet: %v", err)
	}
	var hcm hcmv3.HttpConnectionManager
	if err := b.GetStaticResources().GetListeners()[0].GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	if err := hcm.ValidateAll(); err != nil {
		t.Fatalf("README Envoy snippet, connection manager: %v", err)
	}
	for _, f := range hcm.GetHttpFilters() {
		m, err := f.GetTypedConfig().UnmarshalNew()
		if err != nil {
			t.Fatalf("filter %s: %v", f.GetName(), err)
		}
		if v, ok := m.(interface{ ValidateAll() error }); !ok || v.ValidateAll() != nil {
			t.Fatalf("filter %s: %v", f.GetName(), v.ValidateAll())
		}
		_ = proto.Message(m)
	}
}
