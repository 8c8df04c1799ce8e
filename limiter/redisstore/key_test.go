package redisstore

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/throttledhq/throttled/limiter"
)

// hashTag is the part of key Redis Cluster hashes: the content of the
// first {...} when it is not empty, else the whole key.
func hashTag(key string) string {
	i := strings.IndexByte(key, '{')
	if i < 0 {
		return key
	}
	j := strings.IndexByte(key[i+1:], '}')
	if j <= 0 {
		return key
	}
	return key[i+1 : i+1+j]
}

// checkKeys: the state key and the sliding log's second key share a hash
// tag of the store's own making, whatever the client key holds.
func checkKeys(t *testing.T, s *Store, key string) {
	t.Helper()
	for _, alg := range limiter.Algorithms() {
		k := s.Key(alg, key)
		tag := hashTag(k)
		if tag == k || strings.ContainsAny(tag, "{}") {
			t.Fatalf("Key(%v, %q) = %q: hash tag %q is not the store's", alg, key, k, tag)
		}
		if hashTag(k+":a") != tag {
			t.Fatalf("Key(%v, %q) = %q: the :a key is in another slot", alg, key, k)
		}
		if !strings.HasPrefix(k, s.prefix) {
			t.Fatalf("Key(%v, %q) = %q: no prefix", alg, key, k)
		}
		if b := s.Bucket(alg, key); !strings.HasPrefix(b, s.prefix) ||
			crc16([]byte(hashTag(b)))&(numSlots-1) != crc16([]byte(tag))&(numSlots-1) {
			t.Fatalf("Bucket(%v, %q) = %q: not in the slot of %q", alg, key, b, k)
		}
	}
}

// TestKeyHashTagIsTheStores: a key cannot choose its hash tag (and so its
// cluster slot), and keys with braces keep their two keys in one slot.
func TestKeyHashTagIsTheStores(t *testing.T) {
	s := New(nil)
	for _, k := range []string{"user:1", "}x", "{x}", "a}{b}", "", "{", "}", "{}", "rule|free|{x}a"} {
		checkKeys(t, s, k)
	}
	if a, b := hashTag(s.Key(limiter.TokenBucket, "{x}a")), hashTag(s.Key(limiter.TokenBucket, "{x}b")); a == b {
		t.Fatalf("keys {x}a and {x}b share the hash tag %q: a client chose its slot", a)
	}
}

// FuzzStoreKey: Key is injective and keeps the store's own hash tag.
func FuzzStoreKey(f *testing.F) {
	f.Add("user:1", "user:2")
	f.Add("}{x}", "}{x}y")
	f.Add("a|b", "a}b")
	s := New(nil)
	f.Fuzz(func(t *testing.T, a, b string) {
		checkKeys(t, s, a)
		if a != b && s.Key(limiter.GCRA, a) == s.Key(limiter.GCRA, b) {
			t.Fatalf("keys %q and %q map to one Redis key", a, b)
		}
	})
}

// TestPrefixWithBracesRefused: a prefix with { or } would put every key in
// one slot (or let keys pick theirs): the store refuses to decide.
func TestPrefixWithBracesRefused(t *testing.T) {
	for _, p := range []string{"app{1}:", "a{", "b}"} {
		if err := CheckPrefix(p); !errors.Is(err, limiter.ErrInvalid) {
			t.Errorf("CheckPrefix(%q) = %v, want ErrInvalid", p, err)
		}
		s := New(nil, limiter.WithPrefix(p))
		_, err := s.Decide(context.Background(), limiter.Request{Key: "k",
			Rule: limiter.Rule{Name: "r", Limit: 1, Period: time.Second, Burst: 1}})
		if !errors.Is(err, limiter.ErrInvalid) {
			t.Errorf("prefix %q: Decide error %v, want ErrInvalid", p, err)
		}
	}
	if err := CheckPrefix("throttled:"); err != nil {
		t.Errorf("CheckPrefix(throttled:) = %v", err)
	}
}

// TestSlotTags: CRC-16 is Redis Cluster's, and each slot has a short tag of
// its own, which a key could not take for a hash tag of another slot.
func TestSlotTags(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31c3 { // CRC-16/XMODEM's check value
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3", got)
	}
	if got := crc16([]byte("foo")) & (numSlots - 1); got != 12182 { // CLUSTER KEYSLOT foo
		t.Fatalf("slot of foo = %d, want 12182", got)
	}
	for s, tag := range slotTags {
		if tag == "" || len(tag) > 3 || strings.ContainsAny(tag, "{}") || int(crc16([]byte(tag))&(numSlots-1)) != s {
			t.Fatalf("slot %d: tag %q", s, tag)
		}
	}
}
