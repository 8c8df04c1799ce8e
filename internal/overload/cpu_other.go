//go:build !unix

package overload

import "time"

// CPUTime is 0 where getrusage is missing: no CPU figure is measured.
func CPUTime() time.Duration { return 0 }
