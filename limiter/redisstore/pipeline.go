package redisstore

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter"
)

// A batch script decides many requests of one algorithm in one EVALSHA:
// the algorithm's script, with ARGV[n] read as ARGV[argt + n] (the
// decision's rule arguments, n = 1..7), ARGV[8] as ARGV[argf] (its client
// key) and KEYS[n] as KEYS[kb + n], becomes a function called once per
// decision, which returns the reply's 4 numbers instead of a table. Its
// prelude is batchPrelude, not part/prelude.lua: Redis TIME is read once
// for the whole batch, and the rule's arguments are parsed again only when
// a decision's rule set differs from the previous decision's (the same
// strings: the same numbers, so the answers are those of the one-decision
// script). The decisions run in one protected call (pcall) while none
// fails; one that fails (a key of the wrong type) gets an error reply in
// its place, and the rest go on in a new protected call. Used on a single
// Redis, where a script may touch keys of any slot; on a cluster every
// decision is its own EVALSHA, pipelined per node.
//
//	KEYS = the keys of decision 1 (1, the sliding log 2), of decision 2, …
//	ARGV = R, the rule arguments (the first 7 of the one-decision script)
//	       of rule set 0, …, of rule set R-1, then for each decision its
//	       rule set's number and its client key, or its client key alone
//	       when R is 1
//
// Decisions of a batch mostly share their rule arguments (same rule, cost
// and clock), which are then sent and made into Lua strings once, not per
// decision (ruleSets).
//
// It replies {replies, errors…}: replies packs the 4 numbers of every
// decision's reply as little-endian doubles (exact: all are integers below
// 2^53), 32 bytes each, so that reading a batch allocates one string, not
// an array per decision; a decision that failed has reason -1 there, and
// its error follows, in order. The numbers are packed packChunk decisions
// to a struct.pack (Lua's C stack holds at most 8,000 values).
//
// What runs per decision is kept lean (BENCHMARKS.md, issue 27): globals
// and math's functions are upvalues; the replies are stored in index
// order (a multiple assignment stores right to left, and vals[k] before
// vals[k-3] lands in the table's hash part); a full chunk's format is a
// constant of the script, not a string built (and hashed: Redis's Lua
// hashes every byte of a new string) per batch; one chunk is the reply
// as it is, not copied by table.concat.
const batchHead = `local math, struct, redis, tonumber, pcall, unpack = math, struct, redis, tonumber, pcall, unpack
local KEYS, ARGV = KEYS, ARGV
local min, max, floor, ceil = math.min, math.max, math.floor, math.ceil
local tnow
local function btime()
  if tnow == nil then
    local t = redis.call('TIME')
    tnow = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return tnow
end
local maxus, eps = 9e15, 1e-9
local now, limit, period, burst, cost, m, refund
local rset = -1
local decide = function(argt, argf, kb)
`

// batchPrelude is part/prelude.lua for a decision of a batch (batchHead):
// the same values, from the decision's rule set, parsed when it changes.
const batchPrelude = `if argt ~= rset then
  rset = -1
  if ARGV[1] ~= '' then now = tonumber(ARGV[1]) else now = btime() end
  limit, period, burst = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
  cost, m, refund = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7] == '1'
  rset = argt
end
`

const batchTail = `
end
local base = 1 + tonumber(ARGV[1]) * 7
local one = ARGV[1] == '1'
local nd = one and #ARGV - base or (#ARGV - base) / 2
local vals, res, i = {}, {''}, 1
local function run()
  while i <= nd do
    local k, r1, r2, r3, r4 = 4 * i
    if one then
      r1, r2, r3, r4 = decide(1, base + i, (i - 1) * NKEYS)
    else
      local a = base + 2 * i - 1
      local s = ARGV[a]
      r1, r2, r3, r4 = decide(s == '0' and 1 or 1 + tonumber(s) * 7, a + 1, (i - 1) * NKEYS)
    end
    vals[k - 3] = r1; vals[k - 2] = r2; vals[k - 1] = r3; vals[k] = r4
    i = i + 1
  end
end
while i <= nd do
  local ok, r = pcall(run)
  if not ok then
    local k = 4 * i
    vals[k - 3] = -1; vals[k - 2] = 0; vals[k - 1] = 0; vals[k] = 0
    if type(r) == 'table' and r.err then res[#res + 1] = r
    else res[#res + 1] = {err = 'ERR ' .. tostring(r)} end
    i, rset = i + 1, -1
  end
end
local out = {}
for c = 1, nd, PACKCHUNK do
  local e = min(nd, c + PACKCHUNK - 1)
  local f = FULLFORMAT
  if e - c + 1 < PACKCHUNK then f = '<' .. string.rep('d', 4 * (e - c + 1)) end
  out[#out + 1] = struct.pack(f, unpack(vals, 4 * c - 3, 4 * e))
end
if #out == 1 then res[1] = out[1] else res[1] = table.concat(out) end
return res
`

// packChunk is how many decisions' replies one struct.pack packs.
const packChunk = 64

var (
	argRE    = regexp.MustCompile(`\bARGV\[([1-7])\]`)
	keyArgRE = regexp.MustCompile(`\bARGV\[8\]`)
	keyRE    = regexp.MustCompile(`\bKEYS\[([12])\]`)
	timeRE   = regexp.MustCompile(`redis\.call\('TIME'\)`)
	replyRE  = regexp.MustCompile(`(?m)^return \{(.*)\}\s*$`)
)

// batchSource is the batch script of an algorithm's script src (its
// parts joined), with nkeys keys per decision.
func batchSource(src string, nkeys int) string {
	src = batchPrelude + strings.TrimPrefix(src, prelude)
	body := argRE.ReplaceAllString(src, "ARGV[argt + $1]")
	body = keyArgRE.ReplaceAllString(body, "ARGV[argf]")
	body = keyRE.ReplaceAllString(body, "KEYS[kb + $1]")
	body = timeRE.ReplaceAllString(body, "btime()")
	body = replyRE.ReplaceAllString(body, "return $1")
	tail := strings.ReplaceAll(batchTail, "NKEYS", strconv.Itoa(nkeys))
	tail = strings.ReplaceAll(tail, "FULLFORMAT", "'<"+strings.Repeat("d", 4*packChunk)+"'")
	return batchHead + body + strings.ReplaceAll(tail, "PACKCHUNK", strconv.Itoa(packChunk))
}

// batchSources and batchScripts are indexed by Algorithm, made once, and
// batchArgs hold their hashes and sources as command arguments.
var batchSources, batchScripts = func() (src [limiter.NumAlgorithms]string, s [limiter.NumAlgorithms]*redis.Script) {
	for _, a := range limiter.Algorithms() {
		src[a] = batchSource(sources[a], numKeys[a])
		s[a] = redis.NewScript(src[a])
	}
	return src, s
}()

var batchShas, batchSrcs = func() (h, src [limiter.NumAlgorithms]any) {
	for i, s := range batchScripts {
		h[i], src[i] = s.Hash(), batchSources[i]
	}
	return h, src
}()

// scratch is what one pipeline needs, pooled: batches allocate once.
type scratch struct {
	batch  []*job
	groups [limiter.NumAlgorithms]group
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// group is the decisions of one algorithm in a batch: one batch script,
// whose command arguments are args ("evalsha", hash, numkeys, keys…, argv…).
type group struct {
	alg   int
	jobs  []*job
	args  []any
	nkeys int
	rules ruleSets
	cmd   *redis.Cmd
}

// sendScripts sends one batch script per algorithm in the batch (single
// Redis only): one command alone, more in one pipeline; then EVAL for those
// that met NOSCRIPT.
func (r *Store) sendScripts(ctx context.Context, jobs []*job, sc *scratch) {
	for _, j := range jobs {
		g := &sc.groups[j.alg]
		g.jobs = append(g.jobs, j)
	}
	var one *group
	n := 0
	for a := range sc.groups {
		if g := &sc.groups[a]; len(g.jobs) > 0 {
			g.build(a)
			one, n = g, n+1
		}
	}
	if n == 1 { // the usual batch: no pipeline to build and run
		one.cmd = r.c.Do(ctx, one.args...)
		if isNoScript(one.cmd.Err()) {
			one.cmd = r.c.Do(ctx, one.evalArgs()...)
		}
	} else {
		r.pipeScripts(ctx, sc)
	}
	for a := range sc.groups {
		if g := &sc.groups[a]; len(g.jobs) > 0 {
			g.spread()
			clear(g.args)
			clear(g.jobs)
			g.rules.reset()
			g.jobs, g.args, g.cmd = g.jobs[:0], g.args[:0], nil
		}
	}
}

// build makes g's command arguments for algorithm a.
func (g *group) build(a int) {
	g.alg = a
	g.args = append(g.args[:0], "evalsha", batchShas[a], &g.nkeys)
	for _, j := range g.jobs {
		g.args = j.appendKeys(g.args)
	}
	g.nkeys = len(g.args) - 3
	g.rules.index(g.jobs)
	g.args = append(g.args, &g.rules.n)
	for _, j := range g.rules.first {
		g.args = j.appendRuleArgs(g.args)
	}
	for _, j := range g.jobs {
		if g.rules.n > 1 {
			g.args = append(g.args, &j.set)
		}
		g.args = append(g.args, &j.field)
	}
}

// evalArgs are g's arguments for EVAL of its source, after NOSCRIPT.
func (g *group) evalArgs() []any { return append([]any{"eval", batchSrcs[g.alg]}, g.args[2:]...) }

// pipeScripts sends the built groups of sc in one pipeline, then EVAL for
// those that met NOSCRIPT.
func (r *Store) pipeScripts(ctx context.Context, sc *scratch) {
	pipe, again := r.c.Pipeline(), redis.Pipeliner(nil)
	for a := range sc.groups {
		if g := &sc.groups[a]; len(g.jobs) > 0 {
			g.cmd = pipe.Do(ctx, g.args...)
		}
	}
	_, _ = pipe.Exec(ctx) // errors are read per command
	for a := range sc.groups {
		if g := &sc.groups[a]; len(g.jobs) > 0 && isNoScript(g.cmd.Err()) {
			if again == nil {
				again = r.c.Pipeline()
			}
			g.cmd = again.Do(ctx, g.evalArgs()...)
		}
	}
	if again != nil {
		_, _ = again.Exec(ctx)
	}
}

// spread gives each job of g its own reply from the batch reply.
func (g *group) spread() {
	res, err := g.cmd.Result()
	arr, _ := res.([]any)
	var packed string
	if err == nil && len(arr) > 0 {
		packed, _ = arr[0].(string)
	}
	if err == nil && len(packed) != 32*len(g.jobs) {
		err = fmt.Errorf("%w: batch of %d decisions got %T %v", ErrBadReply, len(g.jobs), res, res)
	}
	for i, j := range g.jobs {
		if err != nil {
			j.err = err
			continue
		}
		for k := range j.rep {
			j.rep[k] = int64(math.Float64frombits(le64(packed[32*i+8*k:])))
		}
		if j.rep[0] == -1 { // its error is the next one
			if len(arr) < 2 {
				j.err = fmt.Errorf("%w: a failed decision without its error", ErrBadReply)
				continue
			}
			if j.err, _ = arr[1].(error); j.err == nil {
				j.err = fmt.Errorf("%w: %T %v in place of an error", ErrBadReply, arr[1], arr[1])
			}
			arr = arr[1:]
		}
	}
}

// le64 reads a little-endian uint64 from the first 8 bytes of s.
func le64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

func isNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

// sendPipelined sends each decision as its own EVALSHA, all in one
// pipeline that the client splits per node (cluster), then EVAL for those
// that met NOSCRIPT, as go-redis Script.Run does.
func (r *Store) sendPipelined(ctx context.Context, jobs []*job) {
	cmds := make([]*redis.Cmd, len(jobs))
	pipe := r.c.Pipeline()
	for i, j := range jobs {
		cmds[i] = pipe.EvalSha(ctx, scripts[j.alg].Hash(), j.keyStrings(), j.appendArgs(nil)...)
	}
	_, _ = pipe.Exec(ctx)
	var again redis.Pipeliner
	for i, j := range jobs {
		if isNoScript(cmds[i].Err()) {
			if again == nil {
				again = r.c.Pipeline()
			}
			cmds[i] = again.Eval(ctx, sources[j.alg], j.keyStrings(), j.appendArgs(nil)...)
		}
	}
	if again != nil {
		_, _ = again.Exec(ctx)
	}
	for i, j := range jobs {
		res, err := cmds[i].Result()
		if err == nil {
			j.rep, err = replyInts(res)
		}
		j.err = err
	}
}
