package redisstore

import (
	"regexp"
	"strings"
	"testing"

	"github.com/throttledhq/throttled/limiter"
)

// Every whole script (ScriptSource: its parts joined) has the one prelude,
// which reads ARGV, one TTL rule (time to refill in ms, rounded up, plus
// one second) and one reply, and all but the sliding log the one way to
// store a bucket's field. The prelude and the store are shared parts
// (lua/part); the TTL rule and the sliding log's reply are each script's
// own, so this still guards them.
func TestScriptsSharePreludeAndFinish(t *testing.T) {
	const preludeEnd, finishStart = "local eps = 1e-9\n", "return {"
	const ttl = "ceil(min(ttl, maxus) / 1000) + 1000"
	const storeStart = "-- Store (the same in every script)"
	var prelude, finish, store string
	for _, a := range limiter.Algorithms() {
		src := ScriptSource(a)
		i, j := strings.Index(src, "local now\n"), strings.Index(src, preludeEnd)
		k := strings.LastIndex(src, finishStart)
		if i < 0 || j < 0 || k < 0 || !strings.Contains(src, ttl) {
			t.Fatalf("%v: script lacks the prelude, the TTL rule or the reply", a)
		}
		p, f := src[i:j+len(preludeEnd)], src[k:]
		if a != limiter.SlidingWindowLog {
			st := strings.Index(src, storeStart)
			if st < 0 || st > k {
				t.Fatalf("%v: script lacks the store", a)
			}
			if store == "" {
				store = src[st:k]
			} else if src[st:k] != store {
				t.Errorf("%v: store differs from token_bucket's:\n%s", a, src[st:k])
			}
		}
		if prelude == "" {
			prelude, finish = p, f
			continue
		}
		if p != prelude {
			t.Errorf("%v: prelude differs from token_bucket's:\n%s", a, p)
		}
		if f != finish {
			t.Errorf("%v: finish differs from token_bucket's:\n%s", a, f)
		}
	}
	if ScriptSource(limiter.Algorithm(limiter.NumAlgorithms)) != "" {
		t.Error("ScriptSource of an unknown algorithm is not empty")
	}
}

// TestBatchSources: in a batch script's decision every ARGV index is read
// at its rule set's offset or is its client key, every KEYS index at the
// decision's offset, and Redis TIME only through the batch's one read.
func TestBatchSources(t *testing.T) {
	for _, a := range limiter.Algorithms() {
		src := batchSources[a]
		body := src[len(batchHead):strings.Index(src, "\nend\nlocal base")] // the decision function
		if n, m := strings.Count(body, "ARGV["), strings.Count(body, "ARGV[argt + ")+strings.Count(body, "ARGV[argf]"); n != m || n == 0 {
			t.Errorf("%v: %d ARGV indexes, %d at the offsets", a, n, m)
		}
		for _, v := range []string{"argt", "argf", "kb"} { // the offsets must not be shadowed
			if regexp.MustCompile(`\blocal\b[^=\n]*\b` + v + `\b`).MatchString(body) {
				t.Errorf("%v: a local named %s hides the decision's offset", a, v)
			}
		}
		if n, m := strings.Count(src, "KEYS["), strings.Count(src, "KEYS[kb + "); n != m || n == 0 {
			t.Errorf("%v: %d KEYS indexes, %d at the offset", a, n, m)
		}
		if n := strings.Count(src, "redis.call('TIME')"); n != 1 {
			t.Errorf("%v: %d TIME calls, want the batch's one", a, n)
		}
	}
}

// TestBatchKeepsPreludeValues: a batch parses a rule set's arguments into
// now, limit, period, burst, cost, m and refund once and keeps them for
// the next decisions of the set, so no script may assign one of them or
// hide one with a local of its own after the prelude.
func TestBatchKeepsPreludeValues(t *testing.T) {
	names := `(now|limit|period|burst|cost|m|refund)`
	// an assignment's or a local's names, at the start of a statement
	lhs := regexp.MustCompile(`(?:^|\bthen\b|\belse\b|\bdo\b|;)\s*(?:local\s+)?([A-Za-z_][\w]*(?:\s*,\s*[A-Za-z_][\w]*)*)\s*=[^=]`)
	param := regexp.MustCompile(`\bfunction\b[^(]*\(([^)]*)\)`)
	bad := regexp.MustCompile(`^` + names + `$`)
	for _, a := range limiter.Algorithms() {
		src := strings.TrimPrefix(ScriptSource(a), prelude)
		for _, line := range strings.Split(src, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "--") {
				continue
			}
			var found []string
			for _, m := range lhs.FindAllStringSubmatch(line, -1) {
				found = append(found, strings.Split(m[1], ",")...)
			}
			for _, m := range param.FindAllStringSubmatch(line, -1) {
				found = append(found, strings.Split(m[1], ",")...)
			}
			for _, n := range found {
				if bad.MatchString(strings.TrimSpace(n)) {
					t.Errorf("%v: %q assigns or hides the prelude's %s", a, strings.TrimSpace(line), strings.TrimSpace(n))
				}
			}
		}
	}
	// the check itself finds them
	for _, line := range []string{"now = 1", "local q, cost = 1, 2", "if x then m, y = 1, 2 end", "local function f(a, limit) end"} {
		hit := false
		for _, m := range lhs.FindAllStringSubmatch(line, -1) {
			for _, n := range strings.Split(m[1], ",") {
				hit = hit || bad.MatchString(strings.TrimSpace(n))
			}
		}
		for _, m := range param.FindAllStringSubmatch(line, -1) {
			for _, n := range strings.Split(m[1], ",") {
				hit = hit || bad.MatchString(strings.TrimSpace(n))
			}
		}
		if !hit {
			t.Errorf("the check misses %q", line)
		}
	}
}
