package childproc

import (
	"os/exec"
	"syscall"
)

// Command is exec.Command for a child that must not outlive this
// process: it is killed when its parent dies, however that happens.
func Command(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}
