package preview

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// JSON writes the report as indented JSON, for scripts.
func (r Report) JSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(r)
}

// Text writes the report for a person.
func (r Report) Text(w io.Writer) error {
	var b strings.Builder
	from := r.Current
	if from == "" {
		from = "(no config)"
	}
	if !r.Apply {
		fmt.Fprintf(&b, "Update %s -> %s would be REFUSED in prepare (node state %s):\n  %s\n", from, r.Desired,
			r.Refusal.State, r.Refusal.Message)
		if len(r.Refusal.Problems) > 0 {
			b.WriteString("Offending fields:\n")
		}
		for _, p := range r.Refusal.Problems {
			fmt.Fprintf(&b, "  %s: %s\n", orDash(p.Field), p.Message)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "Update %s -> %s would be applied.\n", from, r.Desired)
	if r.Current == "" {
		b.WriteString("With no current config, the daemon first adopts the desired one if the node already matches it " +
			"(nothing written); else it writes everything below.\n")
	}
	drain := "no drain"
	if r.DrainRequired {
		drain = "drain required (cordon and drain first): " + r.PostAction.DrainReason
	}
	fmt.Fprintf(&b, "Post action: %s; %s\n", r.PostAction.describe(), drain)
	r.ETA.write(&b)
	r.Drain.write(&b)
	writeFiles(&b, r.Files)
	writeUnits(&b, r.Units)
	for _, k := range r.SSHKeys {
		fmt.Fprintf(&b, "SSH keys of %s: %d -> %d  => %s%s\n", k.User, k.Before, k.After, k.Action, ruleNote(k.Decided))
	}
	if o := r.OSImage; o != nil {
		fmt.Fprintf(&b, "OS image: %s -> %s  => reboot\n", orDash(o.From), orDash(o.To))
	}
	if k := r.KernelArgs; k != nil {
		var edit []string
		if len(k.Removed) > 0 {
			edit = append(edit, "remove "+strings.Join(k.Removed, " "))
		}
		if len(k.Added) > 0 {
			edit = append(edit, "add "+strings.Join(k.Added, " "))
		}
		fmt.Fprintf(&b, "Kernel arguments: %s  => reboot\n", strings.Join(edit, "; "))
	}
	if len(r.Files)+len(r.Units) == 0 && len(r.SSHKeys) == 0 && r.OSImage == nil && r.KernelArgs == nil {
		b.WriteString("No changes.\n")
	}
	if r.NotPreviewed != "" {
		fmt.Fprintf(&b, "Not previewed: %s.\n", r.NotPreviewed)
	} else {
		b.WriteString("The node's side was checked too (owners, paths, the booted OS).\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (a *PostAction) describe() string {
	if len(a.Actions) == 0 {
		return a.Kind
	}
	return a.Kind + " (" + strings.Join(a.Actions, ", ") + ")"
}

var changeMark = map[string]string{Added: "+", Changed: "~", Removed: "-"}

func writeFiles(b *strings.Builder, files []FileChange) {
	if len(files) == 0 {
		return
	}
	b.WriteString("Files:\n")
	for _, f := range files {
		var what []string
		switch {
		case f.Change == Added:
			what = append(what, fmt.Sprintf("%d bytes", *f.Size), "mode "+f.Mode.To, "owner "+f.Owner.To)
		case f.Change == Changed && f.ContentsChanged:
			what = append(what, fmt.Sprintf("contents changed, %d -> %d bytes", *f.OldSize, *f.Size))
		case f.Change == Changed:
			what = append(what, fmt.Sprintf("contents unchanged, %d bytes", *f.Size))
		}
		if f.Change == Changed && f.Mode != nil {
			what = append(what, "mode "+f.Mode.From+" -> "+f.Mode.To)
		}
		if f.Change == Changed && f.Owner != nil {
			what = append(what, "owner "+f.Owner.From+" -> "+f.Owner.To)
		}
		fmt.Fprintf(b, "  %s %s%s  => %s%s\n", changeMark[f.Change], f.Path, paren(what), f.Action, ruleNote(f.Decided))
	}
}

func writeUnits(b *strings.Builder, units []UnitChange) {
	if len(units) == 0 {
		return
	}
	b.WriteString("Units:\n")
	for _, u := range units {
		var what []string
		switch {
		case u.Change == Added && u.ContentsChanged:
			what = append(what, "with contents")
		case u.Change == Changed && u.ContentsChanged:
			what = append(what, "contents changed")
		}
		for _, d := range u.Dropins {
			what = append(what, "drop-in "+d.Name+" "+d.Change)
		}
		if e := u.Enablement; e != nil && u.Change == Added {
			what = append(what, e.To)
		} else if e != nil {
			what = append(what, "enablement "+orLeft(e.From)+" -> "+orLeft(e.To))
		}
		if m := u.Masked; m != nil && u.Change == Added {
			what = append(what, m.To)
		} else if m != nil {
			what = append(what, orNot(m.From, "masked")+" -> "+orNot(m.To, "masked"))
		}
		fmt.Fprintf(b, "  %s %s%s  => %s%s\n", changeMark[u.Change], u.Name, paren(what), u.Action, ruleNote(u.Decided))
	}
}

func paren(what []string) string {
	if len(what) == 0 {
		return ""
	}
	return " (" + strings.Join(what, "; ") + ")"
}

// ruleNote names the rule that decided a change: its path, and where it
// comes from when that is not the defaults.
func ruleNote(d Decided) string {
	switch {
	case d.Source == "":
		return ""
	case d.Rule == "":
		return " [rule " + d.Source + "]"
	case d.Source == "default":
		return " [rule " + d.Rule + "]"
	}
	return " [rule " + d.Rule + ", " + d.Source + "]"
}

func orDash(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func orLeft(s string) string {
	if s == "" {
		return "left alone"
	}
	return s
}

func orNot(s, what string) string {
	if s == "" {
		return "not " + what
	}
	return s
}

// write says what the drain would do now (nil: not forecast).
func (f *DrainForecast) write(b *strings.Builder) {
	switch {
	case f == nil:
		return
	case f.Refused != "":
		fmt.Fprintf(b, "Drain forecast: the drain would not start: %s\n", f.Refused)
		return
	}
	fmt.Fprintf(b, "Drain forecast: would evict %d pods (%d held by a budget at zero now), leave %d DaemonSet or static pods\n",
		len(f.Evict), f.Blocked, f.Skipped)
	for _, p := range f.Evict {
		note := strings.Join(p.Budgets, "; ")
		if p.BlockedBy != "" {
			note = "WAITS: " + p.BlockedBy
		}
		if p.Last {
			note = strings.TrimPrefix(note+"; evicted last", "; ")
		}
		fmt.Fprintf(b, "  %s  %s\n", p.Pod, orDash(note))
	}
	if f.WaitsBeforeCordon != "" {
		fmt.Fprintf(b, "The update would wait before its cordon: %s\n", f.WaitsBeforeCordon)
	}
}
