package redisstore

import (
	"context"
	"fmt"
	"regexp"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter"
)

// A batch script decides many requests of one algorithm in one EVALSHA:
// the algorithm's script, with ARGV[n] read as ARGV[b + n] and KEYS[n] as
// KEYS[kb + n], becomes a function called once per decision (under pcall,
// so one bad key fails only its own decision, as an error reply in its
// place); Redis TIME is read once for the whole batch. Used on a single
// Redis, where a script may touch keys of any slot; on a cluster every
// decision is its own EVALSHA, pipelined per node.
//
//	KEYS = keys of decision 1, keys of decision 2, …  (1 or 2 per decision)
//	ARGV = the 7 arguments of decision 1, of decision 2, …
const batchHead = `local tnow
local function btime()
  if tnow == nil then tnow = redis.call('TIME') end
  return tnow
end
local decide = function(b, kb)
`

const batchTail = `
end
local nk, out = %d, {}
for i = 1, #ARGV / 7 do
  local ok, r = pcall(decide, (i - 1) * 7, (i - 1) * nk)
  if ok then out[i] = r
  elseif type(r) == 'table' and r.err then out[i] = r
  else out[i] = {err = 'ERR ' .. tostring(r)} end
end
return out
`

var (
	argRE  = regexp.MustCompile(`\bARGV\[([1-7])\]`)
	keyRE  = regexp.MustCompile(`\bKEYS\[([12])\]`)
	timeRE = regexp.MustCompile(`redis\.call\('TIME'\)`)
)

// batchSource is the batch script of an algorithm's script src.
func batchSource(src string, keysPer int) string {
	body := argRE.ReplaceAllString(src, "ARGV[b + $1]")
	body = keyRE.ReplaceAllString(body, "KEYS[kb + $1]")
	body = timeRE.ReplaceAllString(body, "btime()")
	return batchHead + body + fmt.Sprintf(batchTail, keysPer)
}

// batchSources and batchScripts are indexed by Algorithm, made once.
var batchSources, batchScripts = func() (src [limiter.NumAlgorithms]string, s [limiter.NumAlgorithms]*redis.Script) {
	for _, a := range limiter.Algorithms() {
		src[a] = batchSource(sources[a], keysPer(a))
		s[a] = redis.NewScript(src[a])
	}
	return src, s
}()

// keysPer is how many keys one decision of a touches.
func keysPer(a limiter.Algorithm) int {
	if a == limiter.SlidingWindowLog {
		return 2
	}
	return 1
}

// group is the decisions of one algorithm in a batch: one batch script.
type group struct {
	jobs []*job
	keys []string
	args []any
	cmd  *redis.Cmd
}

// sendScripts sends one batch script per algorithm in the batch, all in
// one pipeline (single Redis only), then EVAL for those that met NOSCRIPT.
func (r *Store) sendScripts(ctx context.Context, jobs []*job) {
	var groups [limiter.NumAlgorithms]*group
	for _, j := range jobs {
		g := groups[j.alg]
		if g == nil {
			g = &group{}
			groups[j.alg] = g
		}
		g.jobs = append(g.jobs, j)
		g.keys = append(g.keys, j.keys...)
		g.args = append(g.args, j.args[:]...)
	}
	pipe, again := r.c.Pipeline(), redis.Pipeliner(nil)
	for a, g := range groups {
		if g != nil {
			g.cmd = pipe.EvalSha(ctx, batchScripts[a].Hash(), g.keys, g.args...)
		}
	}
	_, _ = pipe.Exec(ctx) // errors are read per command
	for a, g := range groups {
		if g != nil && isNoScript(g.cmd.Err()) {
			if again == nil {
				again = r.c.Pipeline()
			}
			g.cmd = again.Eval(ctx, batchSources[a], g.keys, g.args...)
		}
	}
	if again != nil {
		_, _ = again.Exec(ctx)
	}
	for _, g := range groups {
		if g != nil {
			g.spread()
		}
	}
}

// spread gives each job of g its own reply from the batch reply.
func (g *group) spread() {
	res, err := g.cmd.Result()
	arr, ok := res.([]any)
	if err == nil && (!ok || len(arr) != len(g.jobs)) {
		err = fmt.Errorf("%w: batch of %d decisions got %T %v", ErrBadReply, len(g.jobs), res, res)
	}
	for i, j := range g.jobs {
		if err != nil {
			j.err = err
			continue
		}
		if e, ok := arr[i].(error); ok {
			j.err = e
			continue
		}
		j.res = arr[i]
	}
}

func isNoScript(err error) bool { return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") }

// sendPipelined sends each decision as its own EVALSHA, all in one
// pipeline that the client splits per node (cluster), then EVAL for those
// that met NOSCRIPT, as go-redis Script.Run does.
func (r *Store) sendPipelined(ctx context.Context, jobs []*job) {
	cmds := make([]*redis.Cmd, len(jobs))
	pipe := r.c.Pipeline()
	for i, j := range jobs {
		cmds[i] = pipe.EvalSha(ctx, scripts[j.alg].Hash(), j.keys, j.args[:]...)
	}
	_, _ = pipe.Exec(ctx)
	var again redis.Pipeliner
	for i, j := range jobs {
		if isNoScript(cmds[i].Err()) {
			if again == nil {
				again = r.c.Pipeline()
			}
			cmds[i] = again.Eval(ctx, sources[j.alg], j.keys, j.args[:]...)
		}
	}
	if again != nil {
		_, _ = again.Exec(ctx)
	}
	for i, j := range jobs {
		j.res, j.err = cmds[i].Result()
	}
}
