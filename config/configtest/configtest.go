// Package configtest makes the configurations tests serve with.
package configtest

import (
	"testing"

	"github.com/throttledhq/throttled/config"
	"github.com/throttledhq/throttled/internal/testenv"
)

// Serve is testenv.ServeConfig parsed: free loopback ports in front of
// upstream ("" for none), on the Redis at redisURL ("" for the embedded
// store).
func Serve(tb testing.TB, upstream, redisURL string) *config.Config {
	tb.Helper()
	c, err := config.Parse([]byte(testenv.ServeConfig(upstream, redisURL)), nil)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}
