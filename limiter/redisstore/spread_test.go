package redisstore_test

// On the cluster, the conformance and property suites run with their
// decisions spread over the masters: each new (algorithm, key) of a test is
// renamed to a key of its own whose slot belongs to the next master in turn,
// and at the end of the test every master must have run decisions.

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/internal/testenv"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/redisstore"
)

// spread hands out keys in turn to the masters of one cluster.
type spread struct {
	cl   *testenv.Cluster
	c    *redis.ClusterClient
	keys *redisstore.Store // only for Key: the hash tag ignores the prefix

	mu   sync.Mutex // guards next
	next int        // the master of the next new key
}

func newSpread(t *testing.T, cl *testenv.Cluster) *spread {
	c := cl.Client(t)
	return &spread{cl: cl, c: c, keys: redisstore.New(c)}
}

// renamer gives the stores of one group (one shared truth) one renaming.
func (sp *spread) renamer() *renamer { return &renamer{sp: sp, names: map[string]string{}} }

// name is a key of the next master's slots for (alg, key).
func (sp *spread) name(alg limiter.Algorithm, key string) (string, error) {
	sp.mu.Lock()
	want := sp.cl.Masters[sp.next%len(sp.cl.Masters)].Addr()
	sp.next++
	sp.mu.Unlock()
	for i := 0; i < 1000; i++ {
		k := key + "#" + strconv.Itoa(i)
		m, err := sp.c.MasterForKey(context.Background(), sp.keys.Key(alg, k))
		if err != nil {
			return "", fmt.Errorf("master of %s: %w", k, err)
		}
		if m.Options().Addr == want {
			return k, nil
		}
	}
	return "", fmt.Errorf("no key like %s# on master %s", key, want)
}

// decisionsPerMaster counts the scripts each master ran (EVALSHA and EVAL).
func (sp *spread) decisionsPerMaster(t *testing.T) []int {
	out := make([]int, len(sp.cl.Masters))
	for i, m := range sp.cl.Masters {
		c := redis.NewClient(&redis.Options{Addr: m.Addr()})
		out[i] = testenv.CommandCalls(t, c, "evalsha") + testenv.CommandCalls(t, c, "eval")
		_ = c.Close()
	}
	return out
}

// requireSpread fails t unless every master ran decisions, when the test
// used at least one key per master (a test of one or two keys reaches as
// many masters).
func (sp *spread) requireSpread(t *testing.T) {
	n := sp.decisionsPerMaster(t)
	sp.mu.Lock()
	keys := sp.next
	sp.mu.Unlock()
	for i, c := range n {
		if c == 0 && keys >= len(n) {
			t.Errorf("master %d (%s) ran no decision: per master %v", i, sp.cl.Masters[i].Addr(), n)
		}
	}
	t.Logf("decisions per master: %v", n)
}

// renamer renames the keys of one group of stores, the same way for all.
type renamer struct {
	sp    *spread
	mu    sync.Mutex // guards names
	names map[string]string
}

func (r *renamer) key(alg limiter.Algorithm, key string) (string, error) {
	if key == "" { // left for the store to refuse
		return key, nil
	}
	id := fmt.Sprintf("%d/%s", alg, key)
	r.mu.Lock()
	defer r.mu.Unlock()
	if k, ok := r.names[id]; ok {
		return k, nil
	}
	k, err := r.sp.name(alg, key)
	if err == nil {
		r.names[id] = k
	}
	return k, err
}

// spreadStore is a store whose keys are renamed.
type spreadStore struct {
	limiter.Store
	r *renamer
}

func (s spreadStore) Decide(ctx context.Context, req limiter.Request) (limiter.Decision, error) {
	k, err := s.r.key(req.Rule.Algorithm, req.Key)
	if err != nil {
		return limiter.Decision{}, err
	}
	req.Key = k
	return s.Store.Decide(ctx, req)
}
