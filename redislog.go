package throttled

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/wait"
)

// Redis outage logging. Unreachable, Redis makes every part that uses it
// fail (admin store, watcher, subscriber, lease), each on its own schedule:
// dozens of lines in seconds that bury the one thing to do. redisWatch says
// it once, with what to check, then reminds at most every remindEvery with
// how many warnings it folded meanwhile, and says once when Redis answers
// again. While Redis is known down, the warnings and errors of the parts
// that use it (logged through its logger) are folded: kept at debug level
// and counted.
const (
	redisRemindEvery = time.Minute
	redisProbeEvery  = time.Second
	redisProbeWait   = 2 * time.Second // at most, per ping
)

// redisWatch tracks whether Redis answers and logs the transitions.
//
// observe is called from one goroutine at a time (buildStore, then the
// runner); down and folded are read by the folding handler concurrently.
type redisWatch struct {
	where   string // "redis at 127.0.0.1:6379" for the messages
	setting string // the setting to check: redis.url or redis.cluster_addrs
	log     *slog.Logger
	ping    func(ctx context.Context) error
	remind  time.Duration

	down   atomic.Bool
	folded atomic.Int64

	since, reminded time.Time // of the outage; owned by observe's caller
}

func newRedisWatch(cfg *config.RedisConfig, log *slog.Logger, ping func(context.Context) error) *redisWatch {
	w := &redisWatch{log: log, ping: ping, remind: redisRemindEvery, setting: "redis.url", where: cfg.Where()}
	switch {
	case len(cfg.ClusterAddrs) > 0:
		w.setting = "redis.cluster_addrs"
	case cfg.Sentinel.Master != "":
		w.setting = "redis.sentinel"
	}
	return w
}

// trouble says what is wrong with Redis from a failed ping's error, with
// the settings to check: the credentials and TLS are named where the
// server's answer shows them at fault.
func (w *redisWatch) trouble(err error) string {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "NOAUTH"):
		return " requires a password: set redis.password (or redis.password_file, THROTTLED_REDIS_PASSWORD)"
	case strings.HasPrefix(msg, "WRONGPASS"), strings.Contains(msg, "without any password configured"):
		return " refused the credentials: check redis.username and redis.password"
	case strings.Contains(msg, "x509:"), strings.Contains(msg, "tls:"):
		return " failed TLS: check redis.tls (ca_file, server_name, cert_file, key_file)"
	}
	return " unreachable, check " + w.setting
}

// logger returns a logger whose warnings and errors are folded while Redis
// is down.
func (w *redisWatch) logger() *slog.Logger {
	return slog.New(&foldHandler{h: w.log.Handler(), w: w})
}

// check pings Redis once and observes the answer.
func (w *redisWatch) check(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, redisProbeWait)
	defer cancel()
	err := w.ping(cctx)
	if ctx.Err() != nil {
		return // shutting down: not Redis's fault
	}
	w.observe(err, time.Now())
}

// run checks Redis every redisProbeEvery until ctx ends.
func (w *redisWatch) run(ctx context.Context) error { return wait.Every(ctx, redisProbeEvery, w.check) }

// observe takes the outcome of a ping at now: the first failure logs the
// actionable line, a failure remind after the last line a reminder, the
// first success after failures that Redis is back.
func (w *redisWatch) observe(err error, now time.Time) {
	down := w.down.Load()
	switch {
	case err != nil && !down:
		w.since, w.reminded = now, now
		w.folded.Store(0)
		w.down.Store(true)
		w.log.Error(w.where+w.trouble(err)+"; serving on the local fallback "+
			"(each instance enforces its share of every quota; the admin API answers 503 until Redis is back)", "err", err)
	case err != nil && now.Sub(w.reminded) >= w.remind:
		w.reminded = now
		w.log.Warn(w.where+" still"+w.trouble(err)+"; serving on the local fallback",
			"for", now.Sub(w.since).Round(time.Second).String(), "folded_warnings", w.folded.Swap(0))
	case err == nil && down:
		w.down.Store(false)
		w.log.Info(w.where+" is back: shared quotas and the admin API resume",
			"down_for", now.Sub(w.since).Round(time.Second).String(), "folded_warnings", w.folded.Swap(0))
	}
}

// foldHandler passes records through, except warnings and errors while
// Redis is down: those are counted and kept at debug level.
type foldHandler struct {
	h slog.Handler
	w *redisWatch
}

func (f *foldHandler) Enabled(ctx context.Context, l slog.Level) bool { return f.h.Enabled(ctx, l) }

func (f *foldHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level < slog.LevelWarn || !f.w.down.Load() {
		return f.h.Handle(ctx, r)
	}
	f.w.folded.Add(1)
	if !f.h.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	r = r.Clone()
	r.Level = slog.LevelDebug
	r.AddAttrs(slog.Bool("folded", true))
	return f.h.Handle(ctx, r)
}

func (f *foldHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &foldHandler{h: f.h.WithAttrs(as), w: f.w}
}

func (f *foldHandler) WithGroup(name string) slog.Handler {
	return &foldHandler{h: f.h.WithGroup(name), w: f.w}
}

// redisLogger is the logger of the parts that use Redis: folding while it
// is down (see redisWatch); the plain logger without Redis.
func (s *Instance) redisLogger() *slog.Logger {
	if s.redisWatch == nil {
		return s.log
	}
	return s.redisLog
}

// watchRedis checks Redis once now (so that an outage at start is one line,
// before the parts that use Redis complain) and then every second.
func (s *Instance) watchRedis(ctx context.Context) {
	s.redisWatch = newRedisWatch(&s.cfg.Redis, s.log, func(ctx context.Context) error { return s.rdb.Ping(ctx).Err() })
	s.redisLog = s.redisWatch.logger()
	s.redisWatch.check(ctx)
	s.runners = append(s.runners, s.redisWatch.run)
}
