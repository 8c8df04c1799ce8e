//go:build race

package throttled

// raceEnabled: the race detector slows every goroutine handoff several
// times, which tests that measure a deadline in milliseconds allow for.
const raceEnabled = true
