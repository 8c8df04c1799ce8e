package redisstore

// ruleSets are the distinct rule arguments of a batch's decisions (the
// first 7 arguments of the one-decision script: clock, limit, period,
// capacity, cost, multiplier, refund), each sent once; a decision names
// its set by number (job.set). A batch of one rule, cost and clock (the
// usual one: Redis TIME) has one set.
type ruleSets struct {
	n     int    // len(first), as a command argument
	first []*job // the first decision of each set, in order
}

// maxSearch bounds how many of the latest sets a decision is compared
// with: decisions of one set come together, and a batch whose every
// decision differs (a store clock) costs no more than a linear scan.
const maxSearch = 8

// index numbers the set of every job of jobs.
func (rs *ruleSets) index(jobs []*job) {
	rs.first = rs.first[:0]
	for _, j := range jobs {
		j.set = -1
		for i := len(rs.first) - 1; i >= max(0, len(rs.first)-maxSearch); i-- {
			if sameRule(rs.first[i], j) {
				j.set = i
				break
			}
		}
		if j.set < 0 {
			j.set = len(rs.first)
			rs.first = append(rs.first, j)
		}
	}
	rs.n = len(rs.first)
}

// reset drops the jobs held.
func (rs *ruleSets) reset() {
	clear(rs.first)
	rs.first, rs.n = rs.first[:0], 0
}

// sameRule reports whether a and b send the same rule arguments.
func sameRule(a, b *job) bool {
	return a.limit == b.limit && a.per == b.per && a.capa == b.capa && a.cost == b.cost &&
		a.now == b.now && a.m == b.m && a.ref == b.ref
}
