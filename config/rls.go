package config

import (
	"fmt"
	"net"
)

// RLSConfig is Envoy's rate limit service (gRPC, limiter/rls), served by
// `throttled serve` when Listen is set.
type RLSConfig struct {
	Listen     string `yaml:"listen"`     // "" = off
	Domain     string `yaml:"domain"`     // "" = rls.DefaultDomain ("throttled")
	Reflection bool   `yaml:"reflection"` // gRPC server reflection, for grpcurl
	// Workers bounds the long-lived goroutines that decide calls
	// (rls.Settings.Workers): 0 = rls.DefaultWorkers, -1 = none.
	Workers int `yaml:"workers"`
}

// CheckConfig is POST /v1/check (enforce.CheckHandler) on the admin
// listener, for gateways that ask over HTTP.
type CheckConfig struct {
	Enabled bool `yaml:"enabled"`
	// Token, when set, is required as "Authorization: Bearer <token>".
	Token string `yaml:"token"`
}

func (c *Config) validateRLS() []fieldErr {
	var errs []fieldErr
	if c.RLS.Listen != "" {
		if _, _, err := net.SplitHostPort(c.RLS.Listen); err != nil {
			errs = append(errs, fieldErr{"rls.listen", "want host:port: " + err.Error()})
		}
	}
	if c.RLS.Workers < -1 {
		errs = append(errs, fieldErr{"rls.workers", fmt.Sprintf("%d: want -1 (none), 0 (the default, 256) or more", c.RLS.Workers)})
	}
	if c.Check.Token != "" && !c.Check.Enabled {
		errs = append(errs, fieldErr{"check.token", "set, but check.enabled is false"})
	}
	return errs
}
