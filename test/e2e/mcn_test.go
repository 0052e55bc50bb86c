package e2e

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// The MachineConfigNode as upstream's v1 stands now, read through the test
// bed's real kubectl: with --image-mode-status an OS update reports the
// split of AppliedFilesAndOS; an update refused as unreconcilable shows
// status.irreconcilableChanges in kubectl describe, one readable line per
// field and no secret, and a later good update clears it; kubectl get -o
// wide shows the columns with Age.
func TestMachineConfigNodeDescribe(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	osConfig(t, "rendered-mcn-a", ign(nil), osImageA)
	osConfig(t, "rendered-mcn-b", ign(map[string]string{"/etc/nodeconfd-mcn.conf": "b\n"}), osImageB)
	fake := rpmOstree(osImageA)
	n, log := nodeOpts(t, "mcn", "rendered-mcn-a", testbed.NodeOptions{OS: &fake, ExtraArgs: []string{
		"--image-mode-status", "--os-pull-attempts", "3", "--os-pull-retry-initial", "200ms", "--os-pull-retry-max", "1s"}})

	// Registered with the split conditions, not yet occurred.
	for _, typ := range []string{"AppliedFiles", "ImagePulledFromRegistry", "AppliedOSImage"} {
		if c := log.Condition(typ); c == nil || c.Status != "False" || c.Reason != "NotYetOccurred" {
			t.Errorf("at registration %s = %+v, want False/NotYetOccurred", typ, c)
		}
	}

	splitUpdate(ctx, t, n, log)
	refusal(ctx, t, n, log)
	goodAgain(ctx, t, n, log)
	wideColumns(t)
}

// splitUpdate runs an OS update: files, then the image pulled and staged,
// then the reboot, each shown by kubectl describe.
func splitUpdate(ctx context.Context, t *testing.T, n *testbed.Node, log *testbed.StatusLog) {
	t.Helper()
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-mcn-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-mcn-b"); err != nil {
		t.Fatal(err)
	}
	var split []string
	for _, tr := range log.Transitions(from) {
		if strings.HasPrefix(tr, "Applied") || strings.HasPrefix(tr, "ImagePulled") {
			split = append(split, tr)
		}
	}
	wantSeq(t, split, []string{"AppliedFilesAndOS=Unknown", "AppliedFiles=Unknown", "AppliedFiles=True",
		"ImagePulledFromRegistry=Unknown", "AppliedOSImage=Unknown",
		"AppliedFilesAndOS=True", "ImagePulledFromRegistry=True", "AppliedOSImage=True"})
	describe := describeMCN(t, "mcn")
	t.Logf("kubectl describe machineconfignode/mcn after the OS update:\n%s", describe)
	for _, want := range []string{
		"Message: Pulled OS image " + osImageB + " with rpm-ostree",
		"Reason: UpdateExecutedImagePulledFromRegistry",
		"Type: ImagePulledFromRegistry",
		"Message: OS image " + osImageB + " staged with rpm-ostree for the next boot",
		"Type: AppliedOSImage",
		"Message: Applied 1 file",
		"Type: AppliedFiles",
		"Type: AppliedFilesAndOS",
	} {
		if !strings.Contains(describe, want) {
			t.Errorf("kubectl describe lacks %q", want)
		}
	}
	if strings.Contains(describe, "Irreconcilable Changes") {
		t.Error("irreconcilableChanges shown before any refusal")
	}

}

// refusal is an update refused as unreconcilable: a disk, a directory and a
// user with a password, on top of an appended file's contents.
func refusal(ctx context.Context, t *testing.T, n *testbed.Node, log *testbed.StatusLog) {
	t.Helper()
	const hash = "$6$rounds=4096$saltsalt$0123456789abcdef"
	bad := `{"ignition":{"version":"3.4.0"},"storage":{` +
		`"files":[{"path":"/etc/nodeconfd-mcn.conf","mode":420,"overwrite":true,"contents":{"source":"data:,b%0A"}},` +
		`{"path":"/etc/nodeconfd-mcn.log","append":[{"source":"data:,private%20data"}]}],` +
		`"disks":[{"device":"/dev/vdb","wipeTable":true}],"directories":[{"path":"/var/lib/mcn","mode":448}]},` +
		`"passwd":{"users":[{"name":"ops","passwordHash":"` + hash + `"}]}}`
	osConfig(t, "rendered-mcn-bad", bad, osImageB)
	if err := n.SetDesired(ctx, "rendered-mcn-bad"); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "True", ""); err != nil {
		t.Fatal(err)
	}
	st, err := log.WaitStatus(ctx, 0, func(s mcfgv1.MachineConfigNodeStatus) bool { return len(s.IrreconcilableChanges) > 0 })
	if err != nil {
		t.Fatal(err)
	}
	describe := describeMCN(t, "mcn")
	t.Logf("kubectl describe machineconfignode/mcn after the refusal:\n%s", describe)
	section := describe[strings.Index(describe, "Irreconcilable Changes:"):]
	for _, want := range []string{
		"Diff: [device=/dev/vdb].device: (none) -> \"/dev/vdb\"; [device=/dev/vdb].wipeTable: (none) -> true\n" +
			"    Field Path: spec.config.storage.disks\n",
		"Diff: [path=/var/lib/mcn].mode: (none) -> 448; [path=/var/lib/mcn].path: (none) -> \"/var/lib/mcn\"\n" +
			"    Field Path: spec.config.storage.directories\n",
		"Field Path: spec.config.storage.files.append\n",
		"[name=ops].passwordHash: (none) -> (set, not shown)",
		"[path=/etc/nodeconfd-mcn.log][0].source: (none) -> (contents not shown: 12 bytes, sha256 ",
	} {
		if !strings.Contains(section, want) {
			t.Errorf("kubectl describe's Irreconcilable Changes lack %q", want)
		}
	}
	// Readable: every line of the section is indented under it, none of
	// the values spill onto lines of their own.
	for _, l := range strings.Split(strings.SplitN(section, "\nEvents:", 2)[0], "\n")[1:] {
		if l != "" && !strings.HasPrefix(l, "  ") {
			t.Errorf("kubectl describe line %q is not indented under Irreconcilable Changes", l)
		}
	}
	for _, secret := range []string{hash, "saltsalt", "private data", "private%20data"} {
		if strings.Contains(describe, secret) {
			t.Errorf("kubectl describe shows %q", secret)
		}
	}
	if len(st.IrreconcilableChanges) != 4 {
		t.Errorf("%d entries, want 4 (disks, directories, files.append, users): %+v", len(st.IrreconcilableChanges), st.IrreconcilableChanges)
	}

}

// goodAgain goes back to the good config: it updates fine and
// irreconcilableChanges is gone.
func goodAgain(ctx context.Context, t *testing.T, n *testbed.Node, log *testbed.StatusLog) {
	t.Helper()
	if err := n.SetDesired(ctx, "rendered-mcn-b"); err != nil {
		t.Fatal(err)
	}
	if err := log.WaitFor(ctx, "NodeDegraded", "False", ""); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-mcn-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := log.WaitStatus(ctx, log.Len()-1, func(s mcfgv1.MachineConfigNodeStatus) bool { return len(s.IrreconcilableChanges) == 0 }); err != nil {
		t.Fatal(err)
	}
	if d := describeMCN(t, "mcn"); strings.Contains(d, "Irreconcilable Changes") {
		t.Errorf("irreconcilableChanges still shown after a good update:\n%s", d)
	}

}

// wideColumns checks kubectl get -o wide: every column, Age after Resumed.
func wideColumns(t *testing.T) {
	t.Helper()
	wide := bed.CP.MustKubectl(t, "get", "machineconfignodes", "mcn", "-o", "wide")
	t.Logf("kubectl get machineconfignodes -o wide:\n%s", wide)
	lines := strings.Split(strings.TrimSpace(wide), "\n")
	wantHeader := "NAME UPDATED UPDATEPREPARED UPDATEEXECUTED UPDATEPOSTACTIONCOMPLETED UPDATECOMPLETED RESUMED AGE " +
		"UPDATECOMPATIBLE UPDATEFILESANDOS DRAINEDNODE CORDONEDNODE REBOOTNODE RELOADEDCRIO UNCORDONED HEALTHCHECKED POOLNAME DESIREDCONFIG CURRENTCONFIG ETA"
	// The ETA column is empty once the update is done (status.updateETA
	// keeps no estimate then).
	row := regexp.MustCompile(`^mcn True True True True True True [0-9]+[smh]([0-9]+[sm])? True \S+ \S+ \S+ \S+ \S+ \S+ \S+ worker rendered-mcn-b rendered-mcn-b$`)
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != wantHeader || !row.MatchString(strings.Join(strings.Fields(lines[1]), " ")) {
		t.Errorf("kubectl get machineconfignodes -o wide:\n%s\nwant header %q and a row like %s", wide, wantHeader, row)
	}
}

// describeMCN runs kubectl describe machineconfignode/<node>, with the
// runs of spaces that align its values squeezed to one (the alignment
// depends on the longest label nearby); the indentation stays.
func describeMCN(t *testing.T, node string) string {
	t.Helper()
	out := bed.CP.MustKubectl(t, "describe", "machineconfignode/"+node)
	return regexp.MustCompile(`(\S) {2,}`).ReplaceAllString(out, "$1 ")
}
