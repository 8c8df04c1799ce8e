// Package enum gives throttled's small typed enums their String and Parse
// from one list of names, so each enum declares only its names.
package enum

import (
	"fmt"
	"strings"
)

// Names are the names of an enum T, indexed by value.
type Names[T ~uint8] struct {
	pkg, what string
	names     []string
}

// New returns the names of an enum T whose values are 0..len(names)-1.
// pkg prefixes errors ("limiter"); what names the enum in them ("algorithm").
func New[T ~uint8](pkg, what string, names ...string) Names[T] {
	return Names[T]{pkg: pkg, what: what, names: names}
}

// Len is the number of values.
func (n Names[T]) Len() int { return len(n.names) }

// Names returns the names in value order (a copy): the list that
// validation elsewhere and schemas accept.
func (n Names[T]) Names() []string { return append([]string(nil), n.names...) }

// Valid reports whether v is one of the values.
func (n Names[T]) Valid(v T) bool { return int(v) < len(n.names) }

// String is v's name, or "Type(v)" for a value out of range.
func (n Names[T]) String(v T) string {
	if n.Valid(v) {
		return n.names[v]
	}
	typ := fmt.Sprintf("%T", v)
	return fmt.Sprintf("%s(%d)", typ[strings.LastIndex(typ, ".")+1:], uint8(v))
}

// Parse reads a name; the error names what was wanted.
func (n Names[T]) Parse(s string) (T, error) {
	for i, name := range n.names {
		if name == s {
			return T(i), nil
		}
	}
	return 0, fmt.Errorf("%s: unknown %s %q (want %s)", n.pkg, n.what, s, n.list())
}

func (n Names[T]) list() string {
	switch len(n.names) {
	case 0:
		return "none"
	case 1:
		return n.names[0]
	}
	return strings.Join(n.names[:len(n.names)-1], ", ") + " or " + n.names[len(n.names)-1]
}
