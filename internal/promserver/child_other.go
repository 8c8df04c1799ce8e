//go:build !linux

package promserver

import "os/exec"

// ChildCommand is exec.Command; outside Linux a child outlives a parent
// that dies without stopping it.
func ChildCommand(name string, args ...string) *exec.Cmd {
	return exec.Command(name, args...)
}
