package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/internal/testenv"
)

func TestBenchJSON(t *testing.T) {
	r := testenv.StartRedis(t)
	for _, args := range [][]string{
		{"decisions", "--store", "memory", "--duration", "200ms", "--concurrency", "4", "--json"},
		{"--store", "redis", "--redis-url", r.URL(), "--algorithm", "gcra", "--duration", "300ms", "--concurrency", "8",
			"--memory-keys", "2000", "--json"},
	} {
		var out bytes.Buffer
		if err := bench(args, &out); err != nil {
			t.Fatal(err)
		}
		var res benchResult
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			t.Fatalf("%q: %v", out.String(), err)
		}
		if res.Decisions == 0 || res.Errors != 0 || res.DecisionsPerSec <= 0 || res.P99Micros < res.P50Micros ||
			res.P999Micros < res.P99Micros || res.CPUSeconds <= 0 {
			t.Fatalf("%v: %+v", args, res)
		}
		// A key holds at least its name; the memory store has no figure.
		if redisRun := res.Store == "redis"; redisRun != (res.RedisBytesPerKey > float64(len("throttled-bench:gc:{mem:1}"))) {
			t.Fatalf("%v: redis_bytes_per_key %v", args, res.RedisBytesPerKey)
		}
	}
	if err := bench([]string{"--store", "redis", "--max-batch", "-1"}, &bytes.Buffer{}); err == nil {
		t.Fatal("negative --max-batch accepted")
	}
	if err := bench([]string{"--store", "etcd"}, &bytes.Buffer{}); err == nil {
		t.Fatal("unknown store accepted")
	}
}

func TestBenchHTTPJSON(t *testing.T) {
	r := testenv.StartRedis(t)
	var out bytes.Buffer
	err := bench([]string{"http", "--modes", "none,memory,redis,lease", "--redis-url", r.URL(), "--conns", "4",
		"--duration", "150ms", "--runs", "1", "--json"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	var modes []string
	for i := 0; dec.More(); i++ {
		var res httpResult
		if err := dec.Decode(&res); err != nil {
			t.Fatal(err)
		}
		if res.RequestsPerSec <= 0 || res.Errors != 0 || res.HalfLoadRPS <= 0 || res.P99Micros < res.P50Micros ||
			i == 0 && res.Ratio != 1 {
			t.Fatalf("%+v", res)
		}
		modes = append(modes, res.Mode)
	}
	if got := strings.Join(modes, ","); got != "none,memory,redis,lease" {
		t.Fatalf("modes %s", got)
	}
}
