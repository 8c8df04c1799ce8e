package config

import (
	"errors"
	"net"
	"net/netip"
	"net/url"
	"os"
	"strconv"
	"strings"

	"github.com/throttledhq/throttled/admin"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/identity"
	"github.com/throttledhq/throttled/policy"
	"github.com/throttledhq/throttled/signals"
)

// validate reports every problem it finds, each at its YAML path.
func (c *Config) validate() []fieldErr {
	var errs []fieldErr
	add := func(path, msg string) { errs = append(errs, fieldErr{path, msg}) }
	for path, addr := range map[string]string{"listen": c.Listen, "admin.listen": c.Admin.Listen} {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			add(path, "want host:port: "+err.Error())
		}
	}
	if c.Upstream != "" {
		if u, err := url.Parse(c.Upstream); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			add("upstream", "want an http:// or https:// URL with a host")
		}
	}
	errs = append(errs, c.Redis.validate()...)
	if c.Prometheus.URL != "" {
		if u, err := url.Parse(c.Prometheus.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			add("prometheus.url", "want an http:// or https:// URL")
		}
		if msg := c.Prometheus.selectorProblem(); msg != "" {
			add("prometheus.selector", msg)
		}
	}
	errs = append(errs, c.validateAdminListen()...)
	for role, tok := range c.Admin.Tokens {
		if _, err := admin.ParseRole(role); err != nil {
			add("admin.tokens."+role, "want read or write as the key")
		}
		if tok == "" {
			add("admin.tokens."+role, "empty token")
		}
	}
	errs = append(errs, c.checkLimits()...)
	errs = append(errs, c.validateController()...)
	if _, err := GradientSettings(&c.Concurrency); err != nil {
		errs = append(errs, fieldErr{"concurrency", err.Error()})
	}
	errs = append(errs, c.Concurrency.validateWaits()...)
	errs = append(errs, c.validateIdentity()...)
	errs = append(errs, c.validateRLS()...)
	errs = append(errs, c.validatePolicy()...)
	errs = append(errs, c.validateSource()...)
	return errs
}

func (c *Config) validateController() []fieldErr {
	var errs []fieldErr
	cc := &c.Controller
	check := func(ok bool, path, msg string) {
		if !ok {
			errs = append(errs, fieldErr{path, msg})
		}
	}
	check(cc.SignalStaleAfter >= 0, "controller.signal_stale_after", "must not be negative")
	check(cc.ProbeAfter.D() >= 0, "controller.probe_after", "must not be negative")
	check(cc.LeaseTTL.D() > cc.Period.D(), "controller.lease_ttl", "must exceed controller.period")
	check(cc.Scope != "instance" || (c.InnerLoop() && cc.SaturationTarget > 0 && c.SaturationIsRefused()), "controller.scope",
		"instance steps each instance on its inner loop's saturation: it needs the inner loop (concurrency), "+
			"controller.saturation_target > 0 and the default prometheus.saturation_query")
	check(cc.MultiplierStaleAfter.D() >= minStaleAfter(cc), "controller.stale_after",
		"want at least lease_ttl + 2 × period ("+minStaleAfter(cc).String()+
			"), or the enforcers drop the multipliers (stop shedding) while another replica takes the lease")
	for route := range c.RouteBulkheads {
		check(strings.HasPrefix(route, "/"), "route_bulkheads."+route, "a route is a path prefix starting with /")
	}
	for i, route := range c.UpstreamBreaker.Routes {
		check(strings.HasPrefix(route, "/"), "upstream_breaker.routes["+strconv.Itoa(i)+"]", "a route is a path prefix starting with /")
	}
	for tier := range c.Bulkheads {
		if _, ok := c.Tiers[tier]; !ok {
			errs = append(errs, fieldErr{"bulkheads." + tier, "no such tier"})
		}
	}
	return errs
}

func (c *Config) validateIdentity() []fieldErr {
	var errs []fieldErr
	for i, p := range c.Identity.TrustedProxies {
		if _, err := identity.ParsePrefix(p); err != nil {
			errs = append(errs, fieldErr{"identity.trusted_proxies[" + itoa(i) + "]", err.Error()})
		}
	}
	if _, err := enforce.ParseUnassignedKeys(c.Identity.UnassignedKeys); err != nil {
		errs = append(errs, fieldErr{"identity.unassigned_keys", err.Error()})
	}
	j := &c.Identity.JWT
	if j.Secret != "" && j.PublicKeyFile != "" {
		errs = append(errs, fieldErr{"identity.jwt", "set secret or public_key_file, not both"})
	}
	if j.PublicKeyFile != "" {
		if _, err := os.Stat(j.PublicKeyFile); err != nil {
			errs = append(errs, fieldErr{"identity.jwt.public_key_file", err.Error()})
		}
	}
	return errs
}

func (c *Config) validatePolicy() []fieldErr {
	if len(c.Tiers) == 0 {
		return []fieldErr{{"tiers", "at least one tier is needed"}}
	}
	ac := c.Policy()
	if errs := policy.ConfigErrors(ac); len(errs) > 0 {
		out := make([]fieldErr, len(errs))
		for i, err := range errs {
			out[i] = asFieldErr(err)
		}
		return out
	}
	return nil
}

func asFieldErr(err error) fieldErr {
	var fe *policy.FieldError
	if errors.As(err, &fe) {
		return fieldErr{fe.Field, fe.Msg}
	}
	return fieldErr{"config", err.Error()}
}

func itoa(i int) string { return strconv.Itoa(i) }

// validateAdminListen refuses an admin listener off loopback in clear text:
// it serves the admin API (bearer tokens) and /metrics.
func (c *Config) validateAdminListen() []fieldErr {
	t := &c.Admin.TLS
	if (t.CertFile == "") != (t.KeyFile == "") {
		return []fieldErr{{"admin.tls", "set both cert_file and key_file, or neither"}}
	}
	host, _, err := net.SplitHostPort(c.Admin.Listen)
	if err != nil || t.CertFile != "" || c.Admin.AllowPublic || isLoopback(host) {
		return nil
	}
	return []fieldErr{{"admin.listen", c.Admin.Listen + " is not a loopback address: the admin API (bearer tokens) and " +
		"/metrics would be open to the network in clear text; set admin.tls.cert_file and admin.tls.key_file, " +
		"or admin.allow_public: true on a private network or behind a TLS proxy"}}
}

// isLoopback reports whether a listen host binds loopback only ("" and
// unspecified addresses bind every interface).
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// selectorProblem reports prometheus.selector missing while a default query
// is in use (it would steer by every service Prometheus scrapes), or not
// label matchers.
func (p *PrometheusConfig) selectorProblem() string {
	if p.Selector != "" {
		if _, err := signals.ParseSelector(p.Selector); err != nil {
			return `want PromQL label matchers such as job="checkout"`
		}
		return ""
	}
	if p.LatencyQuery != "" && p.ErrorRatioQuery != "" {
		return ""
	}
	return "required with prometheus.url while latency_query or error_ratio_query is unset: " +
		"the default queries would read every service this Prometheus scrapes; set the protected service's " +
		`label matchers, e.g. selector: 'job="checkout"'`
}
