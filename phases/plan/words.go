package plan

import (
	"fmt"
	"maps"
	"slices"
)

// Small helpers the phases and the adapters share, in one place.

// Plural counts what: "1 file", "2 files".
func Plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// SortedKeys returns m's keys in order.
func SortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
