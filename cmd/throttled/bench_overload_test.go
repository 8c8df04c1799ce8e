package main

import (
	"bytes"
	"strings"
	"testing"
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
		{[]string{"--duration", "1s"}, "--duration 1s"},
		{[]string{"--target", "0s"}, "--target"},
		{[]string{"--instances", "99"}, "--instances 99"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--scenario", "instances", "--duration", "3s"}, "--redis-url"},
	} {
		var out bytes.Buffer
		err := bench(append([]string{"overload"}, tc.args...), &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench overload %v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}

func TestAdminAddrPerInstance(t *testing.T) {
	for _, tc := range []struct {
		base string
		i    int
		want string
	}{{"", 3, "127.0.0.1:0"}, {"127.0.0.1:9100", 0, "127.0.0.1:9100"}, {"127.0.0.1:9100", 2, "127.0.0.1:9102"}} {
		if got, err := adminAddr(tc.base, tc.i); err != nil || got != tc.want {
			t.Errorf("adminAddr(%q, %d) = %q, %v; want %q", tc.base, tc.i, got, err, tc.want)
		}
	}
	for _, bad := range []string{"nohost", "127.0.0.1:x", "127.0.0.1:65535"} {
		if _, err := adminAddr(bad, 1); err == nil {
			t.Errorf("adminAddr(%q, 1) accepted", bad)
		}
	}
}
