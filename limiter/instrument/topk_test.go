package instrument

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestTopKSteps(t *testing.T) {
	// K=2: a and b fill the counters; c evicts the smallest (a, count 1)
	// and inherits its count as error; then b grows, d evicts c.
	tk := NewTopK(2, 0, nil)
	steps := []struct {
		key  string
		n    uint64
		want []Count
	}{
		{"a", 1, []Count{{"a", 1, 0}}},
		{"b", 2, []Count{{"b", 2, 0}, {"a", 1, 0}}},
		{"c", 1, []Count{{"b", 2, 0}, {"c", 2, 1}}},
		{"b", 3, []Count{{"b", 5, 0}, {"c", 2, 1}}},
		{"d", 4, []Count{{"d", 6, 2}, {"b", 5, 0}}},
		{"d", 0, []Count{{"d", 6, 2}, {"b", 5, 0}}},
	}
	for i, s := range steps {
		tk.Add(s.key, s.n)
		if got := tk.Top(); !slices.Equal(got, s.want) {
			t.Fatalf("t%d: Add(%q, %d): Top = %v, want %v", i, s.key, s.n, got, s.want)
		}
	}
	if tk.Total() != 11 {
		t.Errorf("Total = %d, want 11", tk.Total())
	}
	tk.Reset()
	if len(tk.Top()) != 0 || tk.Total() != 0 {
		t.Errorf("after Reset: %v, total %d", tk.Top(), tk.Total())
	}
	tk.Add("z", 1)
	if got := tk.Top(); !slices.Equal(got, []Count{{"z", 1, 0}}) {
		t.Errorf("after Reset and Add: %v", got)
	}
}

func TestTopKExactWhenFewKeys(t *testing.T) {
	tk := NewTopK(0, 0, nil)
	if tk.K() != DefaultTopK {
		t.Fatalf("K = %d, want %d", tk.K(), DefaultTopK)
	}
	for i := range DefaultTopK {
		tk.Add(fmt.Sprintf("k%02d", i), uint64(i+1))
		tk.Add(fmt.Sprintf("k%02d", i), uint64(i+1))
	}
	top := tk.Top()
	if len(top) != DefaultTopK {
		t.Fatalf("len(Top) = %d", len(top))
	}
	for i, c := range top {
		j := DefaultTopK - 1 - i
		if c != (Count{fmt.Sprintf("k%02d", j), 2 * uint64(j+1), 0}) {
			t.Errorf("Top[%d] = %v", i, c)
		}
	}
}

func TestTopKHeavyHitters(t *testing.T) {
	const k, n, keys = 50, 200_000, 10_000
	r := rand.New(rand.NewPCG(1, 2))
	z := rand.NewZipf(r, 1.2, 1, keys-1)
	tk := NewTopK(k, 0, nil)
	truth := map[string]uint64{}
	for range n {
		key := fmt.Sprintf("client-%d", z.Uint64())
		truth[key]++
		tk.Add(key, 1)
	}
	top := tk.Top()
	if len(top) != k {
		t.Fatalf("len(Top) = %d, want %d", len(top), k)
	}
	var sum uint64
	tracked := map[string]bool{}
	for _, c := range top {
		sum += c.Count
		tracked[c.Key] = true
		tr := truth[c.Key]
		if c.Count < tr || c.Count-c.Error > tr || c.Error > n/k {
			t.Errorf("%s: estimate %d±%d, true %d, bound N/K=%d", c.Key, c.Count, c.Error, tr, n/k)
		}
	}
	if sum != n || tk.Total() != n {
		t.Errorf("sum of counts %d, Total %d, want %d", sum, tk.Total(), n)
	}
	// Every key above N/K is tracked, and the ten true heaviest are the
	// ten reported heaviest.
	type kv struct {
		k string
		v uint64
	}
	var all []kv
	for key, v := range truth {
		all = append(all, kv{key, v})
		if v > n/k && !tracked[key] {
			t.Errorf("heavy hitter %s (%d > N/K) not tracked", key, v)
		}
	}
	slices.SortFunc(all, func(a, b kv) int {
		if c := cmp.Compare(b.v, a.v); c != 0 {
			return c
		}
		return strings.Compare(a.k, b.k)
	})
	for i := range 10 {
		if top[i].Key != all[i].k {
			t.Errorf("rank %d: got %s (%d), true %s (%d)", i, top[i].Key, top[i].Count, all[i].k, all[i].v)
		}
	}
}

func TestTopKCollector(t *testing.T) {
	const k = 5
	tk := NewTopK(k, 0, nil)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(tk); err != nil {
		t.Fatal(err)
	}
	tk.Add("ip:198.51.100.1", 7)
	tk.Add("sub:alice@example.com", 3)
	want := `# HELP throttled_top_consumers Estimated refused requests over the last one to two windows of the clients refused most, by fingerprint of the client key (space-saving top-K: an overestimate by at most refusals / K).
# TYPE throttled_top_consumers gauge
throttled_top_consumers{key="` + Fingerprint("ip:198.51.100.1") + `"} 7
throttled_top_consumers{key="` + Fingerprint("sub:alice@example.com") + `"} 3
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "throttled_top_consumers"); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		tk.Add(fmt.Sprintf("key-%d", i), uint64(i%7+1))
		if i%100 == 0 {
			if n := testutil.CollectAndCount(tk, "throttled_top_consumers"); n > k {
				t.Fatalf("after %d keys: %d series, want ≤ %d", i+3, n, k)
			}
		}
	}
	if n := testutil.CollectAndCount(tk, "throttled_top_consumers"); n != k {
		t.Fatalf("%d series, want %d", n, k)
	}
	// Keys that are not UTF-8 are exported as fingerprints, which are.
	tk2 := NewTopK(3, 0, nil)
	tk2.Add("a\xff", 2)
	tk2.Add("a\xfe", 1)
	tk2.Add("\xff:b", 1)
	reg2 := prometheus.NewPedanticRegistry()
	reg2.MustRegister(tk2)
	if n, err := testutil.GatherAndCount(reg2); err != nil || n != 3 {
		t.Fatalf("invalid UTF-8 keys: %d series, %v; want 3, nil", n, err)
	}
}

func TestFingerprint(t *testing.T) {
	for _, tc := range []struct{ key, kind string }{
		{"ip:192.0.2.1", "ip"}, {"sub:alice", "sub"}, {"no-kind", "key"}, {"ip:", "ip"},
	} {
		f := Fingerprint(tc.key)
		kind, hex, _ := strings.Cut(f, ":")
		if kind != tc.kind || len(hex) != 12 || strings.Contains(f, strings.TrimPrefix(tc.key, tc.kind+":")) && tc.key != "ip:" {
			t.Errorf("Fingerprint(%q) = %q, want %s: and 12 hex digits, not the key", tc.key, f, tc.kind)
		}
	}
	if Fingerprint("ip:192.0.2.1") == Fingerprint("ip:192.0.2.2") {
		t.Error("two keys, one fingerprint")
	}
}

// TestTopKDecays: counts cover the current and the previous window only,
// at fixed instants of a fake clock (window 1 min).
func TestTopKDecays(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	tk := NewTopK(2, time.Minute, func() time.Time { return now })
	steps := []struct {
		at   time.Duration
		key  string
		n    uint64
		want []Count
	}{
		{0, "a", 10, []Count{{"a", 10, 0}}},
		{59 * time.Second, "b", 1, []Count{{"a", 10, 0}, {"b", 1, 0}}},
		{60 * time.Second, "b", 1, []Count{{"a", 10, 0}, {"b", 2, 0}}}, // t2: a window on: a is in the previous one
		{90 * time.Second, "c", 5, []Count{{"a", 11, 1}, {"c", 6, 1}}}, // t3: c passes b; a (c) untracked in the full current (previous) sketch may have had its least count there
		{120 * time.Second, "", 0, []Count{{"c", 5, 0}, {"b", 1, 0}}},  // t4: a has left
		{150 * time.Second, "b", 6, []Count{{"b", 7, 0}, {"c", 5, 0}}}, // t5
		{181 * time.Second, "", 0, []Count{{"b", 6, 0}}},               // t6: c has left
		{10 * time.Minute, "", 0, []Count{}},                           // t7: everything has left
		{10*time.Minute + time.Second, "d", 1, []Count{{"d", 1, 0}}},   // t8
		{11*time.Minute + 30*time.Second, "", 0, []Count{{"d", 1, 0}}}, // t9: d is in the previous window
	}
	for i, s := range steps {
		now = t0.Add(s.at)
		tk.Add(s.key, s.n)
		if got := tk.Top(); !slices.Equal(got, s.want) {
			t.Fatalf("t%d (+%v): Top = %v, want %v", i, s.at, got, s.want)
		}
	}
	if tk.Total() != 1 {
		t.Errorf("Total = %d, want 1 (d's)", tk.Total())
	}
}

func TestTopKConcurrent(t *testing.T) {
	const k, workers, per = 16, 8, 4000
	tk := NewTopK(k, 0, nil)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for i := range per {
				tk.Add(fmt.Sprintf("k%d", r.IntN(100)), 1)
				if i%500 == 0 {
					if n := testutil.CollectAndCount(tk); n > k {
						t.Errorf("%d series", n)
					}
					_ = tk.Top()
				}
			}
		})
	}
	wg.Wait()
	var sum uint64
	top := tk.Top()
	for _, c := range top {
		sum += c.Count
	}
	if len(top) != k || sum != workers*per || tk.Total() != workers*per {
		t.Fatalf("%d keys, sum %d, total %d; want %d, %d", len(top), sum, tk.Total(), k, workers*per)
	}
}

func ExampleTopK() {
	tk := NewTopK(2, 0, nil)
	for _, k := range []string{"a", "b", "a", "c", "a"} {
		tk.Add(k, 1)
	}
	for _, c := range tk.Top() {
		fmt.Printf("%s %d (true count ≥ %d)\n", c.Key, c.Count, c.Count-c.Error)
	}
	// Output:
	// a 3 (true count ≥ 3)
	// c 2 (true count ≥ 1)
}

func BenchmarkTopKAdd(b *testing.B) {
	tk := NewTopK(100, 0, nil)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("203.0.113.%d/%d", i%256, i)
	}
	b.Run("tracked", func(b *testing.B) {
		for _, k := range keys[:100] {
			tk.Add(k, 1)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			tk.Add(keys[i%100], 1)
			i++
		}
	})
	b.Run("churn", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			tk.Add(keys[i%len(keys)], 1)
			i++
		}
	})
}
