//go:build !linux

package signals

import "time"

// schedTimes is not available outside Linux.
func schedTimes() (run, wait time.Duration, ok bool) { return 0, 0, false }
