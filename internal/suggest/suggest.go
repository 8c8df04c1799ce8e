// Package suggest finds the likely intended word for a typo (did you mean …).
package suggest

import (
	"sort"
	"strings"
)

// Nearest returns the candidate closest to word (case-insensitive edit
// distance with transpositions), or "" when none is close enough to be a
// likely typo.
func Nearest(word string, candidates []string) string {
	w := strings.ToLower(word)
	limit := max(2, len(w)/3)
	best, bestD := "", limit+1
	sorted := append([]string(nil), candidates...)
	sort.Strings(sorted)
	for _, c := range sorted {
		if d := editDistance(w, strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" {
		return best
	}
	for _, c := range sorted { // a key with something added: listen_typo → listen
		lc := strings.ToLower(c)
		if len(lc) >= 4 && len(w) >= 4 && (strings.HasPrefix(w, lc) || strings.HasPrefix(lc, w)) && len(c) > len(best) {
			best = c
		}
	}
	return best
}

// DidYouMean is "; did you mean "X"?" for the nearest candidate, or "".
func DidYouMean(word string, candidates []string) string {
	if n := Nearest(word, candidates); n != "" {
		return "; did you mean \"" + n + "\"?"
	}
	return ""
}

// editDistance is the optimal string alignment distance of a and b: the
// insertions, deletions, substitutions and swaps of neighbours that turn
// one into the other.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}
