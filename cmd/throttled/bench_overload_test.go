package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/internal/bench"
	"github.com/throttledhq/throttled/internal/overload"
)

// Bad arguments to bench overload are refused before anything starts, each
// error naming what is wrong.
func TestBenchOverloadArguments(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--scenario", "nope"}, "nope"},
		{[]string{"--mode", "fast"}, "fast"},
		{[]string{"--front", "grpc"}, `front "grpc"`},
		{[]string{"--duration", "1s"}, "--duration 1s"},
		{[]string{"--target", "0s"}, "--target"},
		{[]string{"--instances", "99"}, "--instances 99"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--scenario", "instances", "--duration", "3s"}, "--redis-url"},
		{[]string{"--scenario", "fleet", "--instances", "31"}, "--instances 31"},
		{[]string{"--scenario", "fleet", "--backend", "sidecar"}, `--backend "sidecar"`},
		{[]string{"--scenario", "surge", "--backend", "per-instance"}, "--scenario fleet"},
		{[]string{"--scenario", "surge", "--redis-cluster"}, "--scenario fleet"},
		{[]string{"--scenario", "fleet", "--redis-cluster", "--redis-url", "redis://127.0.0.1:1"}, "--redis-url"},
		{[]string{"--prometheus", "--prometheus-url", "http://127.0.0.1:1", "--duration", "3s"}, "not both"},
		{[]string{"--scenario", "fleet", "--prometheus", "--duration", "3s"}, "--prometheus does not run with --scenario fleet"},
	} {
		var out bytes.Buffer
		err := benchCmd(append([]string{"overload"}, tc.args...), &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench overload %v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}

// Each run prints one JSON object that names its mode and front, or, as
// text, the headline (the front named unless it is the proxy).
func TestBenchOverloadPrintsFront(t *testing.T) {
	bs := overload.BackendSettings{Workers: 2, ServiceTime: 40 * time.Millisecond}
	sc, err := overload.Lookup("surge", bs.Capacity())
	if err != nil {
		t.Fatal(err)
	}
	base := overload.RunSettings{Duration: 3 * time.Second, Front: overload.Echo, Backend: bs, Stack: bench.Parts{}.Start}
	var out bytes.Buffer
	if err := overloadRuns(&out, sc, []overload.Mode{overload.Off}, base, true, false); err != nil {
		t.Fatal(err)
	}
	var rep struct{ Scenario, Mode, Front string }
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Scenario != "surge" || rep.Mode != "off" || rep.Front != "echo" {
		t.Fatalf("%s: %+v, %v; want surge, off, echo", out.String(), rep, err)
	}
	out.Reset()
	if err := writeOverloadReport(&out, overload.Report{Scenario: "surge", Mode: "off", Front: "echo"}, false); err != nil ||
		!strings.HasPrefix(out.String(), "surge/off/echo: premium admitted ") {
		t.Fatalf("text: %q, %v", out.String(), err)
	}
}
