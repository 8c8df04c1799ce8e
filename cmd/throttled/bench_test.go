package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
)

func TestBenchJSON(t *testing.T) {
	r := testenv.StartRedis(t)
	for _, args := range [][]string{
		{"--store", "memory", "--duration", "200ms", "--concurrency", "4", "--json"},
		{"--store", "redis", "--redis-url", r.URL(), "--algorithm", "gcra", "--duration", "300ms", "--concurrency", "8", "--json"},
	} {
		var out bytes.Buffer
		if err := bench(args, &out); err != nil {
			t.Fatal(err)
		}
		var res benchResult
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("%q: %v", out.String(), err)
		}
		if res.Decisions == 0 || res.Errors != 0 || res.DecisionsPerSec <= 0 || res.P99Micros < res.P50Micros {
			t.Fatalf("%v: %+v", args, res)
		}
	}
	if err := bench([]string{"--store", "etcd"}, &bytes.Buffer{}); err == nil {
		t.Fatal("unknown store accepted")
	}
}
