package redisstore

import (
	"context"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
)

// BenchmarkScriptParts: where a batch script's time per decision goes.
// Each variant is an algorithm's batch script with parts taken out (here
// only, never in the store): whole; no-sweep (no sweep of expired fields);
// no-ttl (the field written, no HLEN, PEXPIRE or sweep); no-write (no
// HSET either); no-calls (no HGET either: the algorithm's arithmetic,
// packing and the reply); frame (the batch's loop, the prelude and a
// constant reply). One caller sends batches of 64 decisions back to back
// on 10,000 keys at 100/s, stepping by 7; clock=redis reads Redis TIME (a
// key comes back within a second, so its bucket's TTL seldom grows),
// clock=revisit-1.2s passes a clock that moves 1.2 s between two
// decisions of a key, as in `bench rls` at 64 callers (8,000 decisions/s
// on 10,000 keys: nearly every decision extends its bucket's TTL).
// redis-us/decision is INFO commandstats' EVALSHA usec ÷ decisions, the
// median of 5 windows of b.N/5 batches each, after one pass over the keys.
func BenchmarkScriptParts(b *testing.B) {
	store := readLua("part/store")
	reply := store[strings.LastIndex(store, "return {"):]
	hget := regexp.MustCompile(`redis\.call\('HGET', KEYS\[1\], ARGV\[8\]\)`)
	for _, a := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA} {
		alg := readLua(a.String())
		variants := []struct{ name, alg, store string }{
			{"whole", alg, store},
			{"no-sweep", alg, strings.Replace(store, "if n % 8 == 0 then", "if false then", 1)},
			{"no-ttl", alg, "redis.call('HSET', KEYS[1], ARGV[8], st)\n" + reply},
			{"no-write", alg, reply},
			{"no-calls", hget.ReplaceAllString(alg, "false"), reply},
			{"frame", "", "return {0, 100, 0, 0}\n"},
		}
		for _, clock := range []string{"redis", "revisit-1.2s"} {
			for _, v := range variants {
				b.Run(a.String()+"/clock="+clock+"/"+v.name, func(b *testing.B) {
					src := batchSource(prelude+v.alg+v.store, 1)
					benchBatches(b, a, src, clock != "redis")
				})
			}
		}
	}
}

// benchBatches runs batches of 64 decisions of src (a batch script of
// algorithm a) and reports its commandstats usec per decision (median of
// 5 windows); with clock, each batch passes its own clock, moving on by
// 1.2 s per 10,000 decisions.
func benchBatches(b *testing.B, a limiter.Algorithm, src string, clock bool) {
	c := testenv.StartRedis(b).Client()
	ctx := context.Background()
	sha, err := c.ScriptLoad(ctx, src).Result()
	if err != nil {
		b.Fatal(err)
	}
	s := New(c, limiter.WithPrefix("parts:"))
	const n, keys = 64, 10_000
	k, now := 0, int64(1_800_000_000_000_000)
	batch := func() {
		nowArg := ""
		if clock {
			now += 1_200_000 * n / keys
			nowArg = strconv.FormatInt(now, 10)
		}
		ks, args := make([]string, n), make([]any, 0, 8+n)
		args = append(args, 1, nowArg, 100, 1_000_000, 100, 1, 1, "")
		for i := range ks {
			field := "client:" + strconv.Itoa(k%keys)
			k += 7
			ks[i] = s.Bucket(a, field)
			args = append(args, field)
		}
		res, err := c.EvalSha(ctx, sha, ks, args...).Slice()
		if err != nil {
			b.Fatal(err)
		}
		if p, _ := res[0].(string); len(res) != 1 || len(p) != 32*n { // a decision failed
			b.Fatalf("want %d replies and no error, got %d bytes and %v", n, len(p), res[1:])
		}
	}
	for range keys / n { // every key once: a steady state
		batch()
	}
	us := windows(b, c, 5, max(1, b.N/5), n, batch)
	b.ReportMetric(us, "redis-us/decision")
}

// windows runs w windows of per calls of batch (each of n decisions),
// with Redis's stats reset before each, and returns the median of their
// EVALSHA usec per decision.
func windows(b *testing.B, c *redis.Client, w, per, n int, batch func()) float64 {
	ctx := context.Background()
	us := make([]float64, 0, w)
	b.ResetTimer()
	for range w {
		if err := c.ConfigResetStat(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		for range per {
			batch()
		}
		calls, usec := testenv.CommandStat(b, c, "evalsha")
		us = append(us, usec/float64(calls*n))
	}
	b.StopTimer()
	slices.Sort(us)
	return us[len(us)/2]
}
