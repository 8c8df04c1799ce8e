package limiter

import (
	"strings"
	"time"
)

// FormatDuration writes d the one way throttled writes a duration: Go's
// form without trailing zero units, "1h" rather than "1h0m0s", "1m30s",
// "250ms". It reads back with time.ParseDuration.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
