package redisstore

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A lane is the queue and the pipelines in flight (Settings.Pipelines) of
// one Redis node. A single Redis has one lane; a cluster has one per
// master, so that a master that stalls or dies holds up the decisions on
// its own slots only, not those of the others queued behind them or
// batched with them.
//
// Lock rule: mu guards queue, flushers, last and want, nothing else.
type lane struct {
	mu       sync.Mutex
	queue    []*job
	flushers int
	last     int // the size of the batch taken last
	want     int // > 0: a flusher lingers until the queue is this long
	readyCh  chan struct{}
	once     sync.Once
}

// ready is the channel that wakes a lingering flusher (capacity 1).
func (l *lane) ready() chan struct{} {
	l.once.Do(func() { l.readyCh = make(chan struct{}, 1) })
	return l.readyCh
}

// wake wakes the lingering flusher, if any; l.mu is held.
func (l *lane) wake() {
	select {
	case l.ready() <- struct{}{}:
	default:
	}
}

// lanes are a store's lanes: one, or one per cluster master by address.
type lanes struct {
	one     lane
	cluster *redis.ClusterClient // nil: one lane
	byNode  sync.Map             // master address → *lane
}

// of is the lane of j's key: on a cluster, that of the master that serves
// its slot by the client's slot map (a key whose master is unknown, or on
// a slot that moved meanwhile, still reaches the right node: the cluster
// pipeline follows MOVED and ASK), else the one lane.
func (ls *lanes) of(ctx context.Context, j *job) *lane {
	if ls.cluster == nil {
		return &ls.one
	}
	m, err := ls.cluster.MasterForKey(ctx, string(j.key))
	if err != nil {
		return &ls.one
	}
	addr := m.Options().Addr
	if l, ok := ls.byNode.Load(addr); ok {
		return l.(*lane)
	}
	l, _ := ls.byNode.LoadOrStore(addr, new(lane))
	return l.(*lane)
}
