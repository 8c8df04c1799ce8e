package config

import (
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
)

func TestConfigSourceValidated(t *testing.T) {
	src := strings.Replace(testenv.ReadmeConfig, "redis:\n", "config:\n  source: files\nredis:\n", 1)
	if _, err := Parse([]byte(src), nil); err == nil || !strings.Contains(err.Error(), "config.source") ||
		!strings.Contains(err.Error(), "store or file") {
		t.Fatalf("config.source: files: %v, want an error naming config.source and the values", err)
	}
	c, err := Parse([]byte(testenv.ReadmeConfig), []string{"THROTTLED_CONFIG_SOURCE=file"})
	if err != nil || c.Source() != SourceFile {
		t.Fatalf("THROTTLED_CONFIG_SOURCE=file: %v, %v", c, err)
	}
	if c, _ := Parse([]byte(testenv.ReadmeConfig), nil); c.Source() != SourceStore {
		t.Fatalf("default source %v, want store", c.Source())
	}
}
