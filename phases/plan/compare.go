package plan

import (
	"bytes"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Compare returns what changes from current to desired. When a section that
// cannot be applied in place differs, it also returns an *UnreconcilableError
// listing every such field; the Diff is complete either way, so a caller
// adopting a node with no known current config (current = Config{}) can
// decide itself what to do with that error.
func Compare(current, desired Config) (Diff, error) {
	var d Diff
	for _, p := range SortedKeys(desired.Files) {
		f := desired.Files[p]
		if cur, ok := current.Files[p]; !ok || !sameFile(cur, f) {
			d.ChangedFiles = append(d.ChangedFiles, f)
		}
	}
	for _, p := range SortedKeys(current.Files) {
		if _, ok := desired.Files[p]; !ok {
			d.RemovedFiles = append(d.RemovedFiles, p)
		}
	}
	for _, n := range SortedKeys(desired.Units) {
		u := desired.Units[n]
		if cur, ok := current.Units[n]; !ok || !sameUnit(cur, u) {
			d.ChangedUnits = append(d.ChangedUnits, u)
		}
	}
	for _, n := range SortedKeys(current.Units) {
		if _, ok := desired.Units[n]; !ok {
			d.RemovedUnits = append(d.RemovedUnits, current.Units[n])
		}
	}
	d.SSHKeys = sshKeysEdit(current.SSHKeys, desired.SSHKeys)
	d.OSImageChanged = current.OSImageURL != desired.OSImageURL
	d.KernelArgsRemoved, d.KernelArgsAdded = kargsEdit(current.KernelArguments, desired.KernelArguments)
	d.ExtensionsChanged = !slices.Equal(sortedSet(current.Extensions), sortedSet(desired.Extensions))
	d.KernelTypeChanged = CanonicalKernelType(current.KernelType) != CanonicalKernelType(desired.KernelType)
	d.PasswordHashChanged = current.PasswordHash != desired.PasswordHash

	if fields := unreconcilableChanges(current.Unreconcilable, desired.Unreconcilable); len(fields) > 0 {
		return d, &UnreconcilableError{Object: desired.Name, Fields: fields,
			Current: current.Unreconcilable, Desired: desired.Unreconcilable}
	}
	return d, nil
}

// sshKeysEdit lists the users whose keys differ, sorted by name: each with
// its desired keys, or with none (and its current field) when the desired
// config gives it none.
func sshKeysEdit(current, desired map[string]UserKeys) []UserKeys {
	var out []UserKeys
	for _, name := range SortedKeys(desired) {
		if d := desired[name]; !slices.Equal(current[name].Keys, d.Keys) {
			out = append(out, d)
		}
	}
	for _, name := range SortedKeys(current) {
		if _, ok := desired[name]; !ok {
			out = append(out, UserKeys{User: name, Field: current[name].Field})
		}
	}
	slices.SortFunc(out, func(a, b UserKeys) int { return strings.Compare(a.User, b.User) })
	return out
}

// removableSections are the sections a desired config may drop, as
// machine-config-daemon allows: storage.links, which it never applies in
// place either, may go (upstream's reconcilable(), for configs that once
// had links); the links stay on the node, as upstream leaves them.
func removableSections() []string { return []string{"spec.config.storage.links"} }

// unreconcilableChanges lists, sorted, the fields whose entries differ.
func unreconcilableChanges(current, desired map[string]string) []string {
	var fields []string
	for k, v := range desired {
		if cur, ok := current[k]; !ok || cur != v {
			fields = append(fields, k)
		}
	}
	for k := range current {
		if _, ok := desired[k]; !ok && !slices.Contains(removableSections(), k) {
			fields = append(fields, k)
		}
	}
	sort.Strings(fields)
	return fields
}

func sameFile(a, b File) bool {
	return a.Path == b.Path && bytes.Equal(a.Contents, b.Contents) && a.Mode == b.Mode &&
		sameOwner(a.User, b.User) && sameOwner(a.Group, b.Group)
}

func sameOwner(a, b Owner) bool {
	return a.Name == b.Name && samePtr(a.ID, b.ID)
}

func sameUnit(a, b Unit) bool {
	return a.Name == b.Name && a.Mask == b.Mask &&
		samePtr(a.Contents, b.Contents) && samePtr(a.Enabled, b.Enabled) &&
		maps.Equal(a.Dropins, b.Dropins)
}

// samePtr reports whether a and b are both nil or point to equal values.
func samePtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// kargsEdit is the kernel argument edit from current to desired, as the
// OS updater applies it (each removed argument's first occurrence deleted,
// the added ones appended in order): the smallest one, the multiset
// difference, when that ends in desired's order; else, as upstream's
// generateKargs, every current argument deleted and every desired one
// appended, so that order-sensitive arguments (hugepagesz=1G hugepages=4
// hugepagesz=2M hugepages=6) keep their pairs.
func kargsEdit(current, desired []string) (removed, added []string) {
	removed, added = MultisetMinus(current, desired), MultisetMinus(desired, current)
	out := slices.Clone(current)
	for _, r := range removed {
		if i := slices.Index(out, r); i >= 0 {
			out = slices.Delete(out, i, i+1)
		}
	}
	if slices.Equal(append(out, added...), desired) {
		return removed, added
	}
	return slices.Clone(current), slices.Clone(desired)
}

// MultisetMinus returns the elements of a not matched by one in b, in a's
// order: duplicates count.
func MultisetMinus(a, b []string) []string {
	left := map[string]int{}
	for _, s := range b {
		left[s]++
	}
	var out []string
	for _, s := range a {
		if left[s] > 0 {
			left[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}

// sortedSet returns the distinct elements of s, sorted.
func sortedSet(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}
