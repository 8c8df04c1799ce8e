package throttled

import (
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// OpenRedis opens the configured Redis: one server (redis.url), a cluster
// (redis.cluster_addrs) or the master Redis Sentinel names
// (redis.sentinel), with the configured credentials and TLS, per-command
// deadlines honoured, as the fallback needs, and dialing on every new
// connection however long an outage lasts (redisstore.KeepDialing). Its
// errors name the setting and never hold the password.
func OpenRedis(cfg *config.RedisConfig) (redis.UniversalClient, error) {
	password, err := cfg.ReadPassword()
	if err != nil {
		return nil, err
	}
	tlsConfig, err := cfg.ClientTLS()
	if err != nil {
		return nil, err
	}
	timeout := cfg.Timeout.D()
	var c redis.UniversalClient
	switch {
	case len(cfg.ClusterAddrs) > 0:
		// The slot map is reloaded every second: after a failover the dead
		// master's slots give no MOVED, and go-redis's default is 60 s.
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.ClusterAddrs,
			Username: cfg.Username, Password: password, TLSConfig: tlsConfig, ContextTimeoutEnabled: true,
			ReadTimeout: timeout, WriteTimeout: timeout, ClusterStateReloadInterval: time.Second})
	case cfg.Sentinel.Master != "":
		c = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: cfg.Sentinel.Master,
			SentinelAddrs: cfg.Sentinel.Addrs, SentinelPassword: cfg.Sentinel.Password,
			Username: cfg.Username, Password: password, TLSConfig: tlsConfig, ContextTimeoutEnabled: true,
			ReadTimeout: timeout, WriteTimeout: timeout})
	default:
		opt, err := redis.ParseURL(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("redis.url: %s", config.ScrubURL(err.Error(), cfg.URL))
		}
		if cfg.Username != "" {
			opt.Username = cfg.Username
		}
		if password != "" {
			opt.Password = password
		}
		if tlsConfig != nil {
			opt.TLSConfig = tlsConfig
		}
		opt.ContextTimeoutEnabled = true
		opt.ReadTimeout, opt.WriteTimeout = timeout, timeout
		c = redis.NewClient(opt)
	}
	redisstore.KeepDialing(c)
	return c, nil
}
