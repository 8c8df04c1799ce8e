package bench

import (
	_ "embed"
	"net/http"
	"sync"

	"github.com/labstack/echo/v4/middleware"
	"github.com/redis/go-redis/v9"
	"golang.org/x/time/rate"
)

// The peers of `throttled bench http`: other ways to limit the same hello
// world per API key, measured in the same run as throttled's modes. None of
// them writes rate-limit headers; each answers 429 when its limiter refuses.
//
//   - xrate: one golang.org/x/time/rate Limiter per key in a map under a
//     mutex, the usual hand-written middleware.
//   - echo: Echo's in-memory rate limiter (middleware.RateLimiterMemoryStore),
//     called as Echo's RateLimiter middleware calls it: Allow(identifier).
//   - naive-redis: one EVALSHA per request of the plain token bucket
//     (../shared/bench/plain-token-bucket.lua, copied verbatim into
//     plain.lua) through go-redis Script.Run, the way
//     go-redis/redis_rate and most Redis limiters decide.
const (
	peerXRate      = "xrate"
	peerEcho       = "echo"
	peerNaiveRedis = "naive-redis"
)

//go:embed plain.lua
var plainTokenBucket string

var plainScript = redis.NewScript(plainTokenBucket)

// peerHandler is helloWorld behind peer m with a per-key quota of limit
// requests/s and burst, or false when m names no peer.
func peerHandler(m string, rdb redis.UniversalClient, limit float64, burst int) (http.Handler, bool) {
	var allow func(r *http.Request, key string) bool
	switch m {
	case peerXRate:
		p := &xratePeer{lims: make(map[string]*rate.Limiter), r: rate.Limit(limit), b: burst}
		allow = func(_ *http.Request, key string) bool { return p.allow(key) }
	case peerEcho:
		s := middleware.NewRateLimiterMemoryStoreWithConfig(middleware.RateLimiterMemoryStoreConfig{
			Rate: rate.Limit(limit), Burst: burst})
		allow = func(_ *http.Request, key string) bool {
			ok, err := s.Allow(key)
			return ok && err == nil
		}
	case peerNaiveRedis:
		allow = func(r *http.Request, key string) bool {
			v, err := plainScript.Run(r.Context(), rdb, []string{Prefix + "naive:" + key}, limit, burst, 1).Int64Slice()
			return err == nil && len(v) == 2 && v[0] == 1
		}
	default:
		return nil, false
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !allow(r, r.Header.Get("X-API-Key")) {
			http.Error(w, "rate limited", http.StatusTooManyRequests)
			return
		}
		helloWorld(w, r)
	}), true
}

// xratePeer keeps one x/time/rate Limiter per key. Lock rule: mu guards
// lims; a Limiter has its own lock.
type xratePeer struct {
	mu   sync.Mutex
	lims map[string]*rate.Limiter
	r    rate.Limit
	b    int
}

func (p *xratePeer) allow(key string) bool {
	p.mu.Lock()
	l := p.lims[key]
	if l == nil {
		l = rate.NewLimiter(p.r, p.b)
		p.lims[key] = l
	}
	p.mu.Unlock()
	return l.Allow()
}
