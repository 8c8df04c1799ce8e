//go:build !linux

package childproc

import "os/exec"

// Command is exec.Command; outside Linux a child outlives a parent
// that dies without stopping it.
func Command(name string, args ...string) *exec.Cmd {
	return exec.Command(name, args...)
}
