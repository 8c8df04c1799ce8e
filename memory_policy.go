package throttled

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/throttledhq/throttled/internal/wait"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// memoryPolicyEvery is how often Redis's maxmemory-policy is read.
const memoryPolicyEvery = time.Minute

// memoryPolicyWatch keeps throttled_redis_memory_policy_risk{policy} to the
// last successful read of Redis's maxmemory-policy: 1 when it could evict
// live buckets or turn writes into errors, else 0, one series, the current
// policy's (on a cluster, the riskiest node's, named in the warning as
// "node"). It warns when a risk appears or changes; a failed read (on a
// cluster, of any node) keeps the last value and is logged once per streak
// of failures.
//
// check is called from one goroutine at a time (buildStore, then run); the
// fields after every are owned by that caller.
type memoryPolicyWatch struct {
	read     func(context.Context) (redisstore.MemoryPolicy, error)
	gauge    *prometheus.GaugeVec
	log      *slog.Logger  // the risk warnings
	redisLog *slog.Logger  // the failed reads (folded while Redis is down)
	every    time.Duration // memoryPolicyEvery; tests set a shorter one before run

	last    redisstore.MemoryPolicy // of the last successful read
	known   bool                    // some read succeeded: last is set
	failing bool                    // the last read failed
}

// check reads the policy once and observes the answer.
func (w *memoryPolicyWatch) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, redisProbeWait)
	defer cancel()
	mp, err := w.read(cctx)
	if ctx.Err() != nil {
		return // shutting down: not Redis's fault
	}
	w.observe(mp, err)
}

// run checks the policy every w.every until ctx ends.
func (w *memoryPolicyWatch) run(ctx context.Context) error { return wait.Every(ctx, w.every, w.check) }

// observe takes the outcome of a read.
func (w *memoryPolicyWatch) observe(mp redisstore.MemoryPolicy, err error) {
	if err != nil && !w.failing {
		w.redisLog.Warn("redis maxmemory-policy not checked", "err", err)
	}
	if w.failing = err != nil; w.failing {
		return
	}
	prev, known := w.last, w.known
	w.last, w.known = mp, true
	if known && prev.Policy != mp.Policy {
		w.gauge.DeleteLabelValues(prev.Policy)
	}
	risk := 0.0
	if mp.Risk != "" {
		risk = 1
	}
	w.gauge.WithLabelValues(mp.Policy).Set(risk)
	switch {
	case known && prev.Policy == mp.Policy && prev.Risk == mp.Risk: // unchanged: said already
	case mp.Risk != "":
		attrs := []any{"maxmemory", mp.MaxMemory}
		if mp.Node != "" {
			attrs = append(attrs, "node", mp.Node)
		}
		w.log.Warn("redis maxmemory-policy "+mp.Policy+" "+mp.Risk, attrs...)
	case known && prev.Risk != "":
		w.log.Info("redis maxmemory-policy "+mp.Policy+": no longer a risk to the buckets", "maxmemory", mp.MaxMemory)
	}
}

// watchMemoryPolicy registers throttled_redis_memory_policy_risk, reads the
// policy once now and then every memoryPolicyEvery (s.memPolicy.every).
func (s *Instance) watchMemoryPolicy(ctx context.Context) error {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "throttled_redis_memory_policy_risk",
		Help: "1 when Redis's maxmemory-policy (label) could evict live buckets or turn writes into errors, " +
			"else 0; as last read (every minute)."}, []string{"policy"})
	if err := s.reg.Register(g); err != nil {
		return err
	}
	s.memPolicy = &memoryPolicyWatch{gauge: g, log: s.log, redisLog: s.redisLogger(), every: memoryPolicyEvery,
		read: func(ctx context.Context) (redisstore.MemoryPolicy, error) {
			return redisstore.CheckMemoryPolicy(ctx, s.rdb)
		}}
	s.memPolicy.check(ctx)
	s.runners = append(s.runners, s.memPolicy.run)
	return nil
}
