package admin

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// Two PUTs with the same If-Match race: exactly one wins (200), the other
// gets 412, every round.
func TestConcurrentPutsSameIfMatch(t *testing.T) {
	f := newFixture(t)
	for round := range 20 {
		tag := f.do("GET", "/v1/tiers/free", readTok, nil).etag()
		codes := make([]int, 2)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Go(func() {
				body := fmt.Sprintf(`{"rate":%d,"period":"1s"}`, 100+10*round+i)
				codes[i] = f.do("PUT", "/v1/tiers/free", writeTok, body, "If-Match", tag).code
			})
		}
		wg.Wait()
		sort.Ints(codes)
		if codes[0] != http.StatusOK || codes[1] != http.StatusPreconditionFailed {
			t.Fatalf("round %d: statuses %v, want [200 412]", round, codes)
		}
	}
	if v := f.snapshot().Version; v != 21 {
		t.Fatalf("version %d after 20 winning writes, want 21", v)
	}
}

// Two creations of the same absent assignment: one 201, the other finds it
// existing and needs If-Match (428).
func TestConcurrentCreate(t *testing.T) {
	f := newFixture(t)
	for round := range 10 {
		codes := make([]int, 2)
		var wg sync.WaitGroup
		for i := range codes {
			wg.Go(func() {
				codes[i] = f.do("PUT", fmt.Sprintf("/v1/keys/c%d", round), writeTok, `{"tier":"free"}`).code
			})
		}
		wg.Wait()
		sort.Ints(codes)
		if codes[0] != http.StatusCreated || codes[1] != http.StatusPreconditionRequired {
			t.Fatalf("round %d: statuses %v, want [201 428]", round, codes)
		}
	}
}

// Writers to different resources never lose each other's changes: the
// loser of a swap starts again from the winner's document.
func TestConcurrentWritersLoseNothing(t *testing.T) {
	f := newFixture(t)
	const n = 12
	var wg sync.WaitGroup
	codes := make([]int, n)
	for i := range n {
		wg.Go(func() {
			codes[i] = f.do("PUT", fmt.Sprintf("/v1/keys/w%d", i), writeTok, `{"tier":"premium"}`).code
		})
	}
	wg.Wait()
	s := f.snapshot()
	for i, c := range codes {
		if c != http.StatusCreated || s.Config.Assignments[fmt.Sprintf("w%d", i)] != "premium" {
			t.Fatalf("writer %d: status %d, stored %v", i, c, s.Config.Assignments)
		}
	}
	if s.Version != n+1 {
		t.Fatalf("version %d, want %d", s.Version, n+1)
	}
	t.Logf("%v swaps lost a race and were retried", testutil.ToFloat64(f.srv.metrics.conflicts))
}
