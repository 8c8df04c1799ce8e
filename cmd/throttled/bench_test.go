package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/bench"
)

// bench decisions (also bench with flags first, the old name) prints one
// JSON object with --json, a line without; bad flags are refused by name.
func TestBenchJSON(t *testing.T) {
	for _, args := range [][]string{
		{"decisions", "--store", "memory", "--duration", "100ms", "--concurrency", "2", "--json"},
		{"--algorithm", "gcra", "--duration", "100ms", "--concurrency", "2", "--json"},
	} {
		var out bytes.Buffer
		if err := benchCmd(args, &out); err != nil {
			t.Fatal(err)
		}
		var res bench.DecisionsResult
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("%q: %v", out.String(), err)
		}
		if res.Store != "memory" || res.Concurrency != 2 || res.Decisions == 0 || res.RedisBytesPerKey != 0 {
			t.Fatalf("%v: %+v", args, res)
		}
	}
	var out bytes.Buffer
	if err := benchCmd([]string{"decisions", "--duration", "100ms", "--concurrency", "2"}, &out); err != nil ||
		!strings.HasPrefix(out.String(), "memory token_bucket: 2 callers, 1024 keys") || !strings.Contains(out.String(), "decisions/s") {
		t.Fatalf("text output %q, %v", out.String(), err)
	}
	for _, tc := range []struct{ args, want string }{
		{"--store redis --max-batch -1", "--max-batch"},
		{"--store etcd", `--store "etcd"`},
		{"--concurrency 0", "--concurrency"},
		{"--algorithm nope", "nope"},
	} {
		if err := benchCmd(strings.Fields(tc.args), io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench %s: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}

// bench http prints one JSON object per mode and round, none first, with
// the rounds numbered; as text, a line each and the median ratios.
func TestBenchHTTPJSON(t *testing.T) {
	var out bytes.Buffer
	err := benchCmd([]string{"http", "--modes", "memory", "--conns", "2", "--duration", "100ms", "--runs", "2", "--json"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	var got []string
	for dec.More() {
		var res bench.HTTPResult
		if err := dec.Decode(&res); err != nil {
			t.Fatal(err)
		}
		got = append(got, res.Mode+"@"+string(rune('0'+res.Round)))
	}
	if s := strings.Join(got, ","); s != "none@1,memory@1,none@2,memory@2" {
		t.Fatalf("modes@rounds %s", s)
	}
	out.Reset()
	if err := benchCmd([]string{"http", "--modes", "memory", "--conns", "2", "--duration", "100ms", "--runs", "1"}, &out); err != nil ||
		!strings.Contains(out.String(), "round 1 memory") || !strings.Contains(out.String(), "median of none: memory ") {
		t.Fatalf("text output %q, %v", out.String(), err)
	}
}

// An unknown bench http mode is refused by name, with the modes there are.
func TestBenchHTTPBadMode(t *testing.T) {
	err := benchCmd([]string{"http", "--modes", "none,bogus"}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), `"bogus"`) || !strings.Contains(err.Error(), "naive-redis") {
		t.Fatalf("err = %v, want the mode named and the modes listed", err)
	}
}

// A bad --serve address is refused, named, before any mode listens.
func TestBenchHTTPServeBadAddr(t *testing.T) {
	for addr, want := range map[string]string{
		"nonsense":        "want host:port",
		"127.0.0.1:http":  "want 0 to 65535",
		"127.0.0.1:70000": "want 0 to 65535",
	} {
		err := benchCmd([]string{"http", "--serve", addr}, io.Discard)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), addr) {
			t.Errorf("--serve %s: %v, want an error naming it: %s", addr, err, want)
		}
	}
}
