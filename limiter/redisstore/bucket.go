package redisstore

import (
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// Buckets. Every algorithm but the sliding log keeps a client key's state as
// one field (named by the key) of a hash, its bucket, which holds the keys
// of one cluster slot: "<prefix><alg>{<tag>}", where tag is a short string
// of that slot and the slot is the one of Key(alg, key). One Redis key per
// client costs about 165 bytes in Redis 7.0 (dict entry, key, value object,
// expires entry) before any state; a field
// of a small hash (a listpack) costs its bytes, so a live key costs about
// 58 bytes with 100,000 keys (token bucket, GCRA; BENCHMARKS.md). Each field carries its expiry
// (time to refill plus one second, in whole seconds); the bucket's TTL
// covers the latest of its fields', rounded up to a multiple of
// BucketTTLGrid, and every 8th new field of a bucket sweeps the expired
// ones.

// BucketTTLGrid is the step of a bucket's expiry: a bucket expires at a
// multiple of it (Unix time, on the store's clock), the first at or after
// the latest expiry of its fields. A key that comes back extends its
// bucket's TTL (a PEXPIRE) only when its field's expiry passes the next
// multiple, at most once in BucketTTLGrid, where a TTL to the second took
// a PEXPIRE at nearly every decision of a key that comes back after more
// than a second. A bucket then outlives its last live field by less than
// BucketTTLGrid (lua/part/store.lua holds the same number).
const BucketTTLGrid = 4 * time.Second

// Bucket is the Redis key of the hash that holds key's state under alg, in
// the field named key (for SlidingWindowLog, whose state is a sorted set,
// see Key). The store, not the key, chooses the bucket and its slot.
func (r *Store) Bucket(alg limiter.Algorithm, key string) string {
	return string(r.appendBucket(make([]byte, 0, len(r.prefix)+8), alg, key))
}

// appendBucket appends Bucket(alg, key) to b.
func (r *Store) appendBucket(b []byte, alg limiter.Algorithm, key string) []byte {
	h := fnvHex(key)
	b = append(append(append(b, r.prefix...), alg.Code()...), '{')
	return append(append(b, slotTags[crc16(h[:])&(numSlots-1)]...), '}')
}

// fnvHex is the 64-bit FNV-1a hash of key in 16 hex digits: Key's hash tag.
func fnvHex(key string) (x [16]byte) {
	h := uint64(14695981039346656037)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= 1099511628211
	}
	for i := range x {
		x[i] = "0123456789abcdef"[h>>(60-4*i)&0xf]
	}
	return x
}

// numSlots is the number of Redis Cluster hash slots.
const numSlots = 16384

// crcTable is CRC-16/XMODEM's, the CRC Redis Cluster hashes keys with.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crcTable[byte(c>>8)^x]
	}
	return c
}

// slotTags[s] is a shortest alphanumeric string (1 to 3 characters) whose
// slot is s: the hash tag of the buckets of slot s.
var slotTags = func() (t [numSlots]string) {
	const abc = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var b [3]byte
	for n := 1; n <= len(b); n++ {
		for i := 0; i < pow(len(abc), n); i++ {
			for k, v := 0, i; k < n; k, v = k+1, v/len(abc) {
				b[k] = abc[v%len(abc)]
			}
			if s := crc16(b[:n]) & (numSlots - 1); t[s] == "" {
				t[s] = string(b[:n])
			}
		}
	}
	return t
}()

func pow(a, n int) int {
	p := 1
	for range n {
		p *= a
	}
	return p
}
