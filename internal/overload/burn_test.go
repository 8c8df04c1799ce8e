package overload

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// children lists the pids of this process's children (Linux).
func children(t *testing.T) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatalf("children: %v", err)
	}
	var out []string
	for _, task := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/children")
		if err == nil {
			out = append(out, strings.Fields(string(b))...)
		}
	}
	return out
}

// TestBurnerRunsUntilStopped: the burner is a process of its own that
// runs until Stop, and is gone after it.
func TestBurnerRunsUntilStopped(t *testing.T) {
	b, err := StartBurner()
	if err != nil {
		t.Fatal(err)
	}
	pid := b.cmd.Process.Pid
	time.Sleep(100 * time.Millisecond)
	if !b.Running() || syscall.Kill(pid, 0) != nil {
		t.Fatalf("burner %d not running before Stop", pid)
	}
	b.Stop()
	b.Stop() // twice is fine
	if b.Running() || syscall.Kill(pid, 0) == nil {
		t.Fatalf("burner %d still there after Stop", pid)
	}
}

// TestBurnStopsWithTheRun: a run cancelled during its burning phase
// leaves no burner behind, and burn returns at once.
func TestBurnStopsWithTheRun(t *testing.T) {
	sc := starved(400)
	lay := newLayout(3 * time.Second) // the overload phase is second 1
	before := len(children(t))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	start := time.Now()
	go func() { burn(ctx, sc, lay, start); close(done) }()
	deadline := time.Now().Add(10 * time.Second)
	for len(children(t)) == before {
		if time.Now().After(deadline) {
			t.Fatal("no burner started in the overload phase")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("burn did not return after the run ended")
	}
	if n := len(children(t)); n != before {
		t.Fatalf("%d children after the run, want %d: the burner outlived it", n, before)
	}
}

// TestStarvedIsSurgeWithABurn: the starved scenario's load is surge's and
// only its overload phase burns.
func TestStarvedIsSurgeWithABurn(t *testing.T) {
	all := Scenarios(400)
	st, su := all["starved"], all["surge"]
	if st.Burn != [NumPhases]bool{false, true, false} || su.Burn != [NumPhases]bool{} {
		t.Fatalf("burn phases: starved %v, surge %v", st.Burn, su.Burn)
	}
	st.Name, st.Burn = su.Name, su.Burn
	if len(st.Loads) != len(su.Loads) || st.Loads[1].Rate != su.Loads[1].Rate || st.Loads[0].Rate != su.Loads[0].Rate {
		t.Fatalf("starved loads %+v, want surge's %+v", st.Loads, su.Loads)
	}
}
