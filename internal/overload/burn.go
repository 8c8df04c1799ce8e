package overload

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	"github.com/throttledhq/throttled/internal/childproc"
)

// BurnCommand is the process a starved phase runs: a shell's busy loop,
// one core's worth of CPU without a fork per iteration. It is another
// process, not goroutines of the bench, as a noisy neighbour or a CPU
// limit is: the Go scheduler cannot give throttled's goroutines priority
// over it.
var BurnCommand = []string{"sh", "-c", "while :; do :; done"}

// Burner runs BurnCommand until Stop; the zero value is stopped.
type Burner struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// StartBurner starts one BurnCommand.
func StartBurner() (*Burner, error) {
	cmd := childproc.Command(BurnCommand[0], BurnCommand[1:]...)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("overload: start the CPU burner %q: %w", BurnCommand, err)
	}
	b := &Burner{cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(b.done) }()
	return b, nil
}

// Running reports whether the burner's process has not exited.
func (b *Burner) Running() bool {
	if b == nil || b.cmd == nil {
		return false
	}
	select {
	case <-b.done:
		return false
	default:
		return true
	}
}

// Stop kills the burner and waits for it; it may be called more than once.
func (b *Burner) Stop() {
	if b == nil || b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Kill()
	<-b.done
}

// burn runs a burner through every phase of sc whose Burn is set, from the
// phase's start to its end, and stops it when ctx ends, whichever is first.
func burn(ctx context.Context, sc Scenario, lay layout, start time.Time) {
	for p := range NumPhases {
		if !sc.Burn[p] {
			continue
		}
		if !sleepUntil(ctx, start.Add(time.Duration(lay.start(p))*time.Second)) {
			return
		}
		b, err := StartBurner()
		if err != nil {
			return // checkBurn found the shell before the run
		}
		sleepUntil(ctx, start.Add(time.Duration(lay.end(p))*time.Second))
		b.Stop()
	}
}

// checkBurn reports a scenario whose burner could not start.
func checkBurn(sc Scenario) error {
	for _, on := range sc.Burn {
		if on {
			if _, err := exec.LookPath(BurnCommand[0]); err != nil {
				return fmt.Errorf("%w: %q burns a core with %q: %w", ErrScenario, sc.Name, BurnCommand, err)
			}
			return nil
		}
	}
	return nil
}

// sleepUntil waits until at; false if ctx ended first.
func sleepUntil(ctx context.Context, at time.Time) bool {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
