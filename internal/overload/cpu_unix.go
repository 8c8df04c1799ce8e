//go:build unix

package overload

import (
	"syscall"
	"time"
)

// CPUTime is this process's user and system CPU so far (getrusage):
// the CPU figure of the overload report and of the other benches.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
