package redisstore

import (
	"embed"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter"
)

// The scripts live in lua/, one complete file per algorithm, so that they
// can be read, linted and run with redis-benchmark as they are. Each decides
// for one client key with
//
//	KEYS = Bucket, Key (the sliding log: Key, Key + ":a")
//	ARGV = now_us ("" = read Redis TIME), limit, period_us (-1: the calendar month), capacity, cost,
//	       multiplier, refund ("1": give cost back, as after a refusal by a later rule),
//	       the client key (the bucket's field)
//
// and replies {reason, remaining, reset_us, retry_us} (all integers). They
// mirror the core's algorithms operation by operation. Numbers passed to
// redis.call keep 17 significant digits (exact doubles); strings built with
// Lua's tostring or ".." would keep only 14, so the sliding log's f()
// formats its members. The prelude and the meters define no functions: a
// closure is made on every EVALSHA.
//
//go:embed lua/*.lua
var luaFiles embed.FS

// sources are the scripts' text, indexed by Algorithm.
var sources = func() (s [limiter.NumAlgorithms]string) {
	for _, a := range limiter.Algorithms() {
		b, err := luaFiles.ReadFile("lua/" + a.String() + ".lua")
		if err != nil {
			panic("redisstore: missing script for " + a.String()) // caught by every test run
		}
		s[a] = string(b)
	}
	return s
}()

// scripts are indexed by Algorithm, made once.
var scripts = func() (s [limiter.NumAlgorithms]*redis.Script) {
	for i, src := range sources {
		s[i] = redis.NewScript(src)
	}
	return s
}()

// ScriptSource is the Lua source of an algorithm's script (the file
// lua/<algorithm>.lua), for operators who preload scripts and for benchmarks
// with redis-benchmark.
func ScriptSource(a limiter.Algorithm) string {
	if int(a) >= len(sources) {
		return ""
	}
	return sources[a]
}
