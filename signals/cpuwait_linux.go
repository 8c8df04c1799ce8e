package signals

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// schedTimes sums the time on a CPU, the time waiting on a run queue and
// the time slices run of every thread of this process (schedstat's three
// fields: ns, ns, count).
func schedTimes() (s schedSample) {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return s
	}
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/schedstat")
		if err != nil {
			continue // the thread ended meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) < 3 {
			return schedSample{}
		}
		r, err1 := strconv.ParseInt(f[0], 10, 64)
		w, err2 := strconv.ParseInt(f[1], 10, 64)
		n, err3 := strconv.ParseInt(f[2], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return schedSample{}
		}
		s.run, s.wait, s.slices = s.run+time.Duration(r), s.wait+time.Duration(w), s.slices+n
		s.ok = true
	}
	return s
}
