package instrument

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestTopKSteps(t *testing.T) {
	// K=2: a and b fill the counters; c evicts the smallest (a, count 1)
	// and inherits its count as error; then b grows, d evicts c.
	tk := NewTopK(2)
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
	tk := NewTopK(0)
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
	tk := NewTopK(k)
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
	tk := NewTopK(k)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(tk); err != nil {
		t.Fatal(err)
	}
	tk.Add("198.51.100.1", 7)
	tk.Add("tier:free", 3)
	want := `# HELP throttled_top_consumers Estimated refused requests of the keys refused most (space-saving top-K: an overestimate by at most total refusals / K).
# TYPE throttled_top_consumers gauge
throttled_top_consumers{key="198.51.100.1"} 7
throttled_top_consumers{key="tier:free"} 3
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
	// Keys that are not UTF-8 are exported sanitised, without clashes.
	tk2 := NewTopK(3)
	tk2.Add("a\xff", 2)
	tk2.Add("a\xfe", 1)
	tk2.Add("a\uFFFD", 1)
	reg2 := prometheus.NewPedanticRegistry()
	reg2.MustRegister(tk2)
	if n, err := testutil.GatherAndCount(reg2); err != nil || n != 1 {
		t.Fatalf("invalid UTF-8 keys: %d series, %v; want 1, nil", n, err)
	}
}

func TestTopKConcurrent(t *testing.T) {
	const k, workers, per = 16, 8, 4000
	tk := NewTopK(k)
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
	tk := NewTopK(2)
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
	tk := NewTopK(100)
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
