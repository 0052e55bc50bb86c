package phases

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

// Limits of status.irreconcilableChanges in the MachineConfigNode API.
const (
	maxIrreconcilableEntries = 32
	maxFieldPathLen          = 70
	maxDiffLen               = 4096
)

// fallbackFieldPath names a field whose path the API cannot take.
const fallbackFieldPath = "spec.config"

// fieldPathPattern is what the API accepts as an entry's fieldPath.
var fieldPathPattern = regexp.MustCompile(`^spec\.[\da-zA-Z.\[\]]+$`)

// selectorPattern matches a list selector by key ("[name=core]",
// "[path=/etc/x]"), which a fieldPath cannot hold; an index ("[3]") stays.
var selectorPattern = regexp.MustCompile(`\[[^\]]*[^\d\]][^\]]*\]`)

// IrreconcilableChanges maps the refusal of an update as unreconcilable to
// the entries of status.irreconcilableChanges: one per field that cannot be
// applied in place, with a readable diff of the node's current config and
// the desired one on one line ("path: current -> desired; ..."), secrets
// and file contents summed up, never shown. An
// OS change the node cannot make (*UnsupportedError) is one entry with its
// reason. Other errors give nil.
//
// Entries whose field paths differ only by a list selector (two users, two
// files appended to) share one entry named by the list, each change
// naming its element; the diff is cut at the API's 4096 characters and the
// entries at its 32, the last one saying what was left out.
func IrreconcilableChanges(err error) []mcfgv1.IrreconcilableChangeDiff {
	var ue *plan.UnreconcilableError
	var us *UnsupportedError
	switch {
	case errors.As(err, &ue):
		return unreconcilableEntries(ue)
	case errors.As(err, &us):
		path, _ := irreconcilableFieldPath(us.Field)
		return []mcfgv1.IrreconcilableChangeDiff{{FieldPath: path, Diff: capDiff(us.Msg)}}
	}
	return nil
}

func unreconcilableEntries(ue *plan.UnreconcilableError) []mcfgv1.IrreconcilableChangeDiff {
	var paths []string
	lines := map[string][]string{}
	for _, f := range ue.Fields {
		path, selector := irreconcilableFieldPath(f)
		if _, ok := lines[path]; !ok {
			paths = append(paths, path)
		}
		cur, curOK := ue.Current[f]
		des, desOK := ue.Desired[f]
		lines[path] = append(lines[path], valueDiff(selector, cur, curOK, des, desOK)...)
	}
	var out []mcfgv1.IrreconcilableChangeDiff
	for i, p := range paths {
		if i == maxIrreconcilableEntries-1 && len(paths) > maxIrreconcilableEntries {
			rest := paths[i:]
			out = append(out, mcfgv1.IrreconcilableChangeDiff{FieldPath: p, Diff: capDiff(strings.Join(append(lines[p],
				fmt.Sprintf("(%d more fields cannot be applied in place: %s)", len(rest)-1, strings.Join(rest[1:], ", "))), diffSep))})
			break
		}
		d := strings.Join(lines[p], diffSep)
		if d == "" {
			d = "changed"
		}
		out = append(out, mcfgv1.IrreconcilableChangeDiff{FieldPath: p, Diff: capDiff(d)})
	}
	return out
}

// irreconcilableFieldPath turns a plan field path into one the API
// accepts: list selectors by key are dropped (and returned, to name the
// element in the diff), and a path still too long or odd is cut back to
// its longest acceptable parent (spec.config when none is).
func irreconcilableFieldPath(field string) (path, selector string) {
	selector = strings.Join(selectorPattern.FindAllString(field, -1), "")
	path = selectorPattern.ReplaceAllString(field, "")
	for !fieldPathPattern.MatchString(path) || len(path) > maxFieldPathLen {
		i := strings.LastIndexAny(path, ".[")
		if i <= len("spec") {
			return fallbackFieldPath, selector
		}
		path = path[:i]
	}
	return path, selector
}

// diffSep separates the changes of one entry's diff.
const diffSep = "; "

// capDiff cuts a diff to the API's limit between two changes, saying how
// many were left out.
func capDiff(d string) string {
	if len(d) <= maxDiffLen {
		return d
	}
	const room = 40 // for the note, at most 40 characters
	changes := strings.Split(d, diffSep)
	kept, size := 0, 0
	for kept < len(changes) && size+len(changes[kept])+len(diffSep) <= maxDiffLen-room {
		size += len(changes[kept]) + len(diffSep)
		kept++
	}
	if kept == 0 {
		return d[:maxDiffLen-room] + fmt.Sprintf("... (%d more characters)", len(d)-(maxDiffLen-room))
	}
	return strings.Join(changes[:kept], diffSep) + fmt.Sprintf("%s... (%d more changes)", diffSep, len(changes)-kept)
}
