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
		{[]string{"--front", "grpc"}, `front "grpc"`},
		{[]string{"--duration", "1s"}, "--duration 1s"},
		{[]string{"--target", "0s"}, "--target"},
		{[]string{"--instances", "99"}, "--instances 99"},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"--scenario", "instances", "--duration", "3s"}, "--redis-url"},
	} {
		var out bytes.Buffer
		err := benchCmd(append([]string{"overload"}, tc.args...), &out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("bench overload %v: %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}
