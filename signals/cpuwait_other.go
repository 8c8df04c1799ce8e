//go:build !linux

package signals

// schedTimes is not available outside Linux.
func schedTimes() schedSample { return schedSample{} }
