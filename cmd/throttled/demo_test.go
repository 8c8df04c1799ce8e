package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/overload"
)

// smallBackend is the demo's backend scaled down to 50 req/s, so that the
// test measures control and not the CPU of a machine that runs other tests
// under -race beside it.
var smallBackend = overload.BackendSettings{Workers: 2, ServiceTime: 40 * time.Millisecond}

// TestDemo runs the demo briefly on embedded defaults: a table per second,
// free shed (503) during the surge, the greedy key's 429s, and the summary
// that ends with the bench's headline.
func TestDemo(t *testing.T) {
	var out bytes.Buffer
	rep, err := runDemo(context.Background(), demoFlags{duration: 9 * time.Second, plain: true, backend: smallBackend}, &out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Phases.During.Status.Shed == 0 {
		t.Fatalf("nothing shed during the surge\n%s", out.String())
	}
	// The greedy key, above its quota, gets 429s whichever loop sheds.
	if g := rep.Totals["greedy"]; g.Class[overload.OverQuota] == 0 {
		t.Fatalf("the greedy key never got a 429\n%s", out.String())
	}
	for _, want := range []string{"t=  4s overload", "503 backend", "summary after 9 s", "surge/controller: premium admitted"} {
		if !strings.Contains(out.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, out.String())
		}
	}
}
