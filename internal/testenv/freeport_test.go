package testenv

import "testing"

// FreePort never hands out a port twice in a process: the kernel may give
// a just-closed port to the next bind, and once a Redis Cluster's six
// nodes, picked one after another, got the same port twice (CI: the
// cluster never became ready). Over 1,000 picks a repeat is all but
// certain without the record of ports handed out.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := map[int]int{}
	for i := range 1000 {
		p := FreePort(t)
		if j, ok := seen[p]; ok {
			t.Fatalf("pick %d: port %d, handed out already at pick %d", i, p, j)
		}
		seen[p] = i
	}
}
