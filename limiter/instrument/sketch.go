package instrument

// sketch is one space-saving summary of K counters: a min-heap by count
// and an index by key. Not safe for concurrent use: TopK locks around it.
type sketch struct {
	index map[string]*topCounter
	heap  []*topCounter // min-heap by count
	total uint64
}

type topCounter struct {
	key        string
	count, err uint64
	pos        int // index in heap
}

func newSketch(k int) sketch {
	return sketch{index: make(map[string]*topCounter, k), heap: make([]*topCounter, 0, k)}
}

// add counts n more for key: a tracked key adds to its counter; a new key
// takes a free counter, or the smallest one's place, inheriting its count
// as its error.
func (s *sketch) add(key string, n uint64) {
	s.total += n
	if c := s.index[key]; c != nil {
		c.count += n
		s.down(c.pos)
		return
	}
	if len(s.heap) < cap(s.heap) {
		c := &topCounter{key: key, count: n, pos: len(s.heap)}
		s.heap = append(s.heap, c)
		s.index[key] = c
		s.up(c.pos)
		return
	}
	c := s.heap[0] // the smallest: replace it
	delete(s.index, c.key)
	c.key, c.err, c.count = key, c.count, c.count+n
	s.index[key] = c
	s.down(0)
}

// reset forgets every key, keeping the storage.
func (s *sketch) reset() {
	clear(s.index)
	clear(s.heap)
	s.heap = s.heap[:0]
	s.total = 0
}

func (s *sketch) less(i, j int) bool { return s.heap[i].count < s.heap[j].count }

func (s *sketch) swap(i, j int) {
	h := s.heap
	h[i], h[j] = h[j], h[i]
	h[i].pos, h[j].pos = i, j
}

func (s *sketch) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !s.less(i, p) {
			return
		}
		s.swap(i, p)
		i = p
	}
}

func (s *sketch) down(i int) {
	n := len(s.heap)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && s.less(r, l) {
			m = r
		}
		if !s.less(m, i) {
			return
		}
		s.swap(i, m)
		i = m
	}
}
