package tokenlease

import (
	"strings"
	"time"
)

// DefaultMaxKeys is the most keys a Store keeps leases for when
// Settings.MaxKeys is 0.
const DefaultMaxKeys = 100_000

// sweepBudget is the most cold leases one new key's insertion drops: the
// sweep holds its shard's lock for a few leases, never for the shard.
const sweepBudget = 8

// A shard's leases are also a list, from the one seen last (head) to the
// one idle longest (tail): the cold leases and the one to evict are at the
// tail, found without a scan. Only leases in the shard's map are linked;
// one replaced or dropped is unlinked, and a refill still running on it
// finishes on a lease nobody finds again (its tokens are lost: see
// Settings.MaxKeys).

// pushFront links l at the head. sh.mu is held.
func (sh *shard) pushFront(l *lease) {
	l.prev, l.next = nil, sh.head
	if sh.head != nil {
		sh.head.prev = l
	} else {
		sh.tail = l
	}
	sh.head = l
}

// unlink takes l out of the list. sh.mu is held.
func (sh *shard) unlink(l *lease) {
	if l.prev != nil {
		l.prev.next = l.next
	} else if sh.head == l {
		sh.head = l.next
	}
	if l.next != nil {
		l.next.prev = l.prev
	} else if sh.tail == l {
		sh.tail = l.prev
	}
	l.prev, l.next = nil, nil
}

// touch moves l, just seen, to the head. sh.mu is held; l is in the map.
func (sh *shard) touch(l *lease) {
	if sh.head != l {
		sh.unlink(l)
		sh.pushFront(l)
	}
}

// remove drops l from the map and the list. sh.mu is held.
func (sh *shard) remove(l *lease) {
	sh.unlink(l)
	delete(sh.leases, leaseKey{l.rule.Name, l.key})
}

// insert puts l, new, for k, replacing the lease k had. Before that it
// drops up to sweepBudget cold leases (not seen within ttl), then, at the
// shard's cap, evicts the leases idle longest; it returns how many it
// evicted. sh.mu is held.
func (sh *shard) insert(k leaseKey, l *lease, now instant, ttl time.Duration) (evicted int) {
	for n := 0; n < sweepBudget && sh.tail != nil; n++ {
		if c := sh.tail; time.Duration(now-c.seen) >= ttl && !c.refilled {
			sh.remove(c)
		} else {
			break
		}
	}
	if old := sh.leases[k]; old != nil {
		sh.remove(old)
	}
	for len(sh.leases) >= sh.max && sh.tail != nil {
		sh.remove(sh.tail)
		evicted++
	}
	// The key is copied: a caller's key may share its bytes with more than
	// the key (enforce builds one buffer).
	l.key = strings.Clone(k.key)
	sh.leases[leaseKey{k.rule, l.key}] = l
	sh.pushFront(l)
	return evicted
}

// Len is the number of keys the store keeps leases for now.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.leases)
		sh.mu.Unlock()
	}
	return n
}
