//go:build !unix

package main

// cpuSeconds is 0 where getrusage is missing: bench reports no CPU figure.
func cpuSeconds() float64 { return 0 }
