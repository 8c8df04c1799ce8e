package redisstore

import (
	"embed"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter"
)

// The scripts are made of parts in lua/: part/prelude.lua (reads ARGV and
// the clock), lua/<algorithm>.lua (the algorithm, in the core's words) and,
// for every algorithm whose state is a field of a bucket (all but the
// sliding log), part/store.lua (writes the field with its expiry, keeps the
// bucket's TTL, sweeps expired fields, replies). ScriptSource is the whole
// script, for operators who preload scripts and for redis-benchmark
// (scripts/bench-redis.sh joins the parts the same way). Each decides for
// one client key with
//
//	KEYS = Bucket (the sliding log: Key, Key + ":a"; numKeys)
//	ARGV = now_us ("" = read Redis TIME), limit, period_us (-1: the calendar month), capacity, cost,
//	       multiplier, refund ("1": give cost back, as after a refusal by a later rule),
//	       the client key (the bucket's field)
//
// and replies {reason, remaining, reset_us, retry_us} (all integers). They
// mirror the core's algorithms operation by operation. Numbers passed to
// redis.call keep 17 significant digits (exact doubles); strings built with
// Lua's tostring or ".." would keep only 14, so the sliding log's f()
// formats its members. The parts define no functions: a closure is made on
// every EVALSHA.
//
//go:embed lua/*.lua lua/part/*.lua
var luaFiles embed.FS

// readLua is the text of lua/<name>.lua.
func readLua(name string) string {
	b, err := luaFiles.ReadFile("lua/" + name + ".lua")
	if err != nil {
		panic("redisstore: missing script " + name) // caught by every test run
	}
	return string(b)
}

// prelude is part/prelude.lua, the start of every script.
var prelude = readLua("part/prelude")

// sources are the scripts' text, indexed by Algorithm.
var sources = func() (s [limiter.NumAlgorithms]string) {
	store := readLua("part/store")
	for _, a := range limiter.Algorithms() {
		s[a] = prelude + readLua(a.String())
		if a != limiter.SlidingWindowLog { // its state is two sorted sets, not a field
			s[a] += store
		}
	}
	return s
}()

// numKeys is the number of KEYS of each algorithm's script: the bucket, or
// the sliding log's two sorted sets.
var numKeys = func() (n [limiter.NumAlgorithms]int) {
	for _, a := range limiter.Algorithms() {
		n[a] = 1
	}
	n[limiter.SlidingWindowLog] = 2
	return n
}()

// scripts are indexed by Algorithm, made once.
var scripts = func() (s [limiter.NumAlgorithms]*redis.Script) {
	for i, src := range sources {
		s[i] = redis.NewScript(src)
	}
	return s
}()

// ScriptSource is the Lua source of an algorithm's whole script (its parts
// joined), for operators who preload scripts and for benchmarks with
// redis-benchmark.
func ScriptSource(a limiter.Algorithm) string {
	if int(a) >= len(sources) {
		return ""
	}
	return sources[a]
}
