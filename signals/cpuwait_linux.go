package signals

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// schedTimes sums the time on a CPU and the time waiting on a run queue
// of every thread of this process (schedstat's first two fields, ns).
func schedTimes() (run, wait time.Duration, ok bool) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return 0, 0, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			return 0, 0, false
		}
		r, err1 := strconv.ParseInt(f[0], 10, 64)
		w, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		run, wait = run+time.Duration(r), wait+time.Duration(w)
		ok = true
	}
	return run, wait, ok
}
