package testenv

import (
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// CommandStat is INFO commandstats' calls and usec (the time Redis spent
// in it, commands it ran from a script included) of cmd (say "evalsha")
// on c since the last CONFIG RESETSTAT: 0, 0 when it has not run.
func CommandStat(tb testing.TB, c *redis.Client, cmd string) (calls int, usec float64) {
	tb.Helper()
	v, ok := Info(tb, c, "commandstats")["cmdstat_"+cmd] // calls=N,usec=M,…
	if !ok {
		return 0, 0
	}
	var err1, err2 error = strconv.ErrSyntax, strconv.ErrSyntax
	for _, f := range strings.Split(v, ",") {
		k, x, _ := strings.Cut(f, "=")
		switch k {
		case "calls":
			calls, err1 = strconv.Atoi(x)
		case "usec":
			usec, err2 = strconv.ParseFloat(x, 64)
		}
	}
	if err1 != nil || err2 != nil {
		tb.Fatalf("testenv: INFO commandstats: cmdstat_%s is %q", cmd, v)
	}
	return calls, usec
}
