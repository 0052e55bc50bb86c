package phases

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeconfd/nodeconfd/phases/plan"
)

const noUpdater = "this node's OS updater bootc cannot make the change: no"

func TestIrreconcilableChanges(t *testing.T) {
	ue := func(cur, des map[string]string) error {
		fields := map[string]bool{}
		for k := range cur {
			fields[k] = true
		}
		for k := range des {
			fields[k] = true
		}
		e := &plan.UnreconcilableError{Object: "rendered-worker-2", Current: cur, Desired: des}
		for f := range fields {
			e.Fields = append(e.Fields, f)
		}
		sortStrings(e.Fields)
		return fmt.Errorf("phase prepare: %w", e)
	}
	tests := []struct {
		name string
		err  error
		want []mcfgv1.IrreconcilableChangeDiff
	}{
		{"other error", errors.New("fetching MachineConfig: not found"), nil},
		{"directory added",
			ue(nil, map[string]string{"spec.config.storage.directories": `[{"path":"/var/lib/x","mode":493}]`}),
			[]mcfgv1.IrreconcilableChangeDiff{{FieldPath: "spec.config.storage.directories",
				Diff: `[path=/var/lib/x].mode: (none) -> 493; [path=/var/lib/x].path: (none) -> "/var/lib/x"`}}},
		{"disk device changed (upstream's example)",
			ue(map[string]string{"spec.config.storage.disks": `[{"device":"/dev/sda","wipeTable":true}]`},
				map[string]string{"spec.config.storage.disks": `[{"device":"/dev/sdb","wipeTable":true}]`}),
			[]mcfgv1.IrreconcilableChangeDiff{{FieldPath: "spec.config.storage.disks",
				Diff: `[device=/dev/sda].device: "/dev/sda" -> (none); [device=/dev/sda].wipeTable: true -> (none); ` +
					`[device=/dev/sdb].device: (none) -> "/dev/sdb"; [device=/dev/sdb].wipeTable: (none) -> true`}}},
		{"index kept, value changed",
			ue(map[string]string{"spec.config.kernelArguments": `{"shouldExist":["a","b"]}`},
				map[string]string{"spec.config.kernelArguments": `{"shouldExist":["a","c"]}`}),
			[]mcfgv1.IrreconcilableChangeDiff{{FieldPath: "spec.config.kernelArguments",
				Diff: `shouldExist[1]: "b" -> "c"`}}},
		{"fips turned on",
			ue(nil, map[string]string{"spec.fips": "true"}),
			[]mcfgv1.IrreconcilableChangeDiff{{FieldPath: "spec.fips", Diff: "(none) -> true"}}},
		{"two users share the list's entry; password hashes never shown",
			ue(map[string]string{"spec.config.passwd.users[name=alice]": `{"name":"alice","passwordHash":"$6$old"}`},
				map[string]string{
					"spec.config.passwd.users[name=alice]": `{"name":"alice","passwordHash":"$6$new"}`,
					"spec.config.passwd.users[name=bob]":   `{"name":"bob","groups":["wheel"]}`,
				}),
			[]mcfgv1.IrreconcilableChangeDiff{{FieldPath: "spec.config.passwd.users",
				Diff: `[name=alice].passwordHash: (set, not shown) -> (changed, not shown); ` +
					`[name=bob].groups[0]: (none) -> "wheel"; [name=bob].name: (none) -> "bob"`}}},
		{"appended contents: sizes and hashes, remote URLs not shown",
			ue(nil, map[string]string{"spec.config.storage.files[path=/etc/hosts].append": `[{"source":"data:,secret%20line"},` +
				`{"source":"https://user:token@example.com/x","httpHeaders":[{"name":"Authorization","value":"Bearer t"}]}]`}),
			[]mcfgv1.IrreconcilableChangeDiff{{FieldPath: "spec.config.storage.files.append",
				Diff: "[path=/etc/hosts][0].source: (none) -> (contents not shown: 11 bytes, sha256 " + hashOf("secret line") + "); " +
					"[path=/etc/hosts][1].httpHeaders: (none) -> (set, not shown); " +
					"[path=/etc/hosts][1].source: (none) -> (https URL not shown, sha256 " + hashOf("https://user:token@example.com/x") + ")"}}},
		{"OS change the node cannot make",
			&StepError{Phase: "prepare", Err: &UnsupportedError{Object: "rendered-worker-2", Field: "spec.osImageURL", Msg: noUpdater}},
			[]mcfgv1.IrreconcilableChangeDiff{{FieldPath: "spec.osImageURL", Diff: noUpdater}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := IrreconcilableChanges(tt.err)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got\n%s\nwant\n%s", show(got), show(tt.want))
			}
			for _, c := range got {
				for _, secret := range []string{"$6$", "secret line", "token", "Bearer"} {
					if strings.Contains(c.Diff, secret) {
						t.Errorf("diff of %s shows %q:\n%s", c.FieldPath, secret, c.Diff)
					}
				}
			}
		})
	}
}

// TestIrreconcilableChangesLimits checks the API's limits: at most 32
// entries, field paths of the accepted form and length, diffs of at most
// 4096 characters.
func TestIrreconcilableChangesLimits(t *testing.T) {
	des := map[string]string{}
	for i := 0; i < 40; i++ {
		des[fmt.Sprintf("spec.config.storage.files[path=/etc/f%02d].append", i)] = `[{"source":"data:,x"}]`
		des[fmt.Sprintf("spec.config.storage.sections%02d", i)] = `[{"path":"/a"}]`
	}
	var links []string
	for i := 0; i < 100; i++ {
		links = append(links, fmt.Sprintf(`{"path":"/l/%03d/%s","target":"/t"}`, i, strings.Repeat("x", 150)))
	}
	des["spec.config.storage.links"] = "[" + strings.Join(links, ",") + "]"
	des["spec.config.storage.raid[name=md0]."+strings.Repeat("deep.", 20)+"x"] = `1`
	e := &plan.UnreconcilableError{Object: "rendered-worker-2", Desired: des}
	for f := range des {
		e.Fields = append(e.Fields, f)
	}
	sortStrings(e.Fields)
	got := IrreconcilableChanges(e)
	if len(got) != maxIrreconcilableEntries {
		t.Fatalf("%d entries, want %d", len(got), maxIrreconcilableEntries)
	}
	seen := map[string]bool{}
	for _, c := range got {
		if !fieldPathPattern.MatchString(c.FieldPath) || len(c.FieldPath) > maxFieldPathLen || seen[c.FieldPath] {
			t.Errorf("fieldPath %q not accepted by the API (or repeated)", c.FieldPath)
		}
		seen[c.FieldPath] = true
		if c.Diff == "" || len(c.Diff) > maxDiffLen {
			t.Errorf("diff of %s: %d characters", c.FieldPath, len(c.Diff))
		}
	}
	if !seen["spec.config.storage.files.append"] {
		t.Errorf("the 40 appended files do not share one entry: %v", seen)
	}
	if last := got[len(got)-1].Diff; !strings.Contains(last, "more fields cannot be applied in place") {
		t.Errorf("the last entry does not say what was left out:\n%s", last)
	}
	for _, c := range got {
		if c.FieldPath == "spec.config.storage.links" && !strings.HasSuffix(c.Diff, "more changes)") {
			t.Errorf("long diff not cut at a line with a note:\n...%s", c.Diff[len(c.Diff)-200:])
		}
	}
}

// TestIrreconcilableChangesFromParse runs the mapping on the error of a
// real comparison of two parsed MachineConfigs.
func TestIrreconcilableChangesFromParse(t *testing.T) {
	parse := func(name, ign string) plan.Config {
		t.Helper()
		cfg, err := plan.Parse(&mcfgv1.MachineConfig{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: mcfgv1.MachineConfigSpec{Config: runtime.RawExtension{Raw: []byte(ign)}}})
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cur := parse("rendered-worker-1", `{"ignition":{"version":"3.5.0"}}`)
	des := parse("rendered-worker-2", `{"ignition":{"version":"3.5.0"},"storage":{"directories":[{"path":"/var/lib/data","mode":448}]},`+
		`"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["ssh-ed25519 AAAA k"]},{"name":"ops","passwordHash":"$6$abc"}]}}`)
	_, err := plan.Compare(cur, des)
	got := IrreconcilableChanges(err)
	want := `[{spec.config.passwd.users [name=ops].name: (none) -> "ops"; [name=ops].passwordHash: (none) -> (set, not shown)} ` +
		`{spec.config.storage.directories [path=/var/lib/data].mode: (none) -> 448; [path=/var/lib/data].path: (none) -> "/var/lib/data"}]`
	if fmt.Sprint(got) != want {
		t.Errorf("got\n%s\nwant\n%s", fmt.Sprint(got), want)
	}
}

func show(cs []mcfgv1.IrreconcilableChangeDiff) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s:\n%s\n", c.FieldPath, c.Diff)
	}
	return b.String()
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j-1] > s[j]; j-- {
			s[j-1], s[j] = s[j], s[j-1]
		}
	}
}
