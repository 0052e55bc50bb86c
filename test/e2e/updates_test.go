package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// Update 2: only an SSH key changes: no reload, no reboot, post action None.
func TestSSHKeysOnly(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOr7 admin@example"
	config(t, "rendered-u2-a", ign(nil))
	config(t, "rendered-u2-b", ign(nil, `"passwd":{"users":[{"name":"core","sshAuthorizedKeys":["`+key+`"]}]}`))
	n, log := node(t, "u2", "rendered-u2-a")
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-u2-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-u2-b"); err != nil {
		t.Fatal(err)
	}
	wantSeq(t, log.Transitions(from), []string{
		"Updated=False", "UpdatePrepared=Unknown", "UpdateCompatible=Unknown", "UpdateCompatible=True", "UpdatePrepared=True",
		"UpdateExecuted=Unknown", "AppliedFilesAndOS=Unknown", "AppliedFilesAndOS=True", "UpdateExecuted=True",
		"UpdatePostActionComplete=Unknown", "UpdatePostActionComplete=True",
		"UpdateComplete=Unknown", "UpdateComplete=True", "Resumed=True", "Updated=True",
	})
	if c := log.Condition("UpdatePostActionComplete"); c.Reason != "None" {
		t.Errorf("UpdatePostActionComplete reason %q, want None", c.Reason)
	}
	if got := readNodeFile(t, n, "/home/core/.ssh/authorized_keys"); !strings.Contains(got, key) {
		t.Errorf("authorized_keys = %q", got)
	}
	fi, err := os.Stat(filepath.Join(n.Sys.Root, "/home/core/.ssh/authorized_keys"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("authorized_keys mode: %v %v", fi.Mode(), err)
	}
	if c, _ := n.Sys.CRIOReloads(); c != 0 {
		t.Errorf("CRI-O reloads = %d, want 0", c)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1", b)
	}
}

// podsOn creates a ReplicaSet object (no controller runs here) and n pods
// it owns on the node.
func podsOn(t *testing.T, nodeName string, count int) {
	t.Helper()
	ctx := context.Background()
	labels := map[string]string{"app": "web-" + nodeName}
	rs, err := bed.Kube.AppsV1().ReplicaSets("default").Create(ctx, &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-" + nodeName},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/web"}}}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	for i := 0; i < count; i++ {
		_, err := bed.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: rs.Name + "-" + string(rune('a'+i)), Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: rs.Name,
					UID: rs.UID, Controller: &yes}}},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "example.com/web"}},
				Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// podsLeft counts the pods on the node a drain evicts: all but the
// daemon's own (a DaemonSet pod, left in place).
func podsLeft(t *testing.T, nodeName string) int {
	t.Helper()
	pods, err := bed.Kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", nodeName).String()})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if c := metav1.GetControllerOf(&p); c == nil || c.Kind != "DaemonSet" {
			n++
		}
	}
	return n
}

const helloUnit = "[Unit]\nDescription=hello\n[Service]\nExecStart=/bin/sleep infinity\n[Install]\nWantedBy=multi-user.target\n"

// Update 3: a unit and a file under /etc change: cordon, drain (with pods on
// the node), reboot once, resume after boot, uncordon, Updated=True.
func TestRebootUpdate(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	config(t, "rendered-u3-a", ign(nil))
	config(t, "rendered-u3-b", ign(map[string]string{"/etc/motd.d/update3": "updated by nodeconfd\n"},
		`"systemd":{"units":[{"name":"hello.service","enabled":true,"contents":`+jsonString(helloUnit)+`}]}`))
	n, log := node(t, "u3", "rendered-u3-a")
	podsOn(t, "u3", 3)
	from := log.Len()
	if err := n.SetDesired(ctx, "rendered-u3-b"); err != nil {
		t.Fatal(err)
	}
	if err := waitCurrent(ctx, log, "rendered-u3-b"); err != nil {
		t.Fatal(err)
	}
	wantSeq(t, log.Transitions(from), rebootSequence)
	if b := n.Sys.Boots(); b != 2 {
		t.Errorf("boots = %d, want 2 (one reboot)", b)
	}
	if c := log.Condition("RebootedNode"); !strings.HasPrefix(c.Message, "Rebooted; boot ID changed from ") {
		t.Errorf("RebootedNode message %q", c.Message)
	}
	if got := readNodeFile(t, n, "/etc/systemd/system/hello.service"); got != helloUnit {
		t.Errorf("unit file = %q", got)
	}
	if _, err := os.Lstat(filepath.Join(n.Sys.Root, "/etc/systemd/system/multi-user.target.wants/hello.service")); err != nil {
		t.Errorf("hello.service not enabled: %v", err)
	}
	if left := podsLeft(t, "u3"); left != 0 {
		t.Errorf("%d pods left on the drained node", left)
	}
	if getNode(t, "u3").Spec.Unschedulable {
		t.Error("node left cordoned")
	}
	wantEvents(t, "u3", "MachineConfigNode", "UpdateCompatible", "Drained", "RebootedNode", "Uncordoned")
	wantEvents(t, "u3", "Node", "Cordoned", "Drained", "RebootedNode")
}

// wantEvents checks the object has events with these reasons.
func wantEvents(t *testing.T, name, kind string, reasons ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		evs, err := bed.Kube.CoreV1().Events("").List(context.Background(), metav1.ListOptions{
			FieldSelector: fields.Set{"involvedObject.name": name, "involvedObject.kind": kind}.String()})
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, e := range evs.Items {
			have[e.Reason] = true
		}
		var missing []string
		for _, r := range reasons {
			if !have[r] {
				missing = append(missing, r)
			}
		}
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%s %s: no events with reasons %v (have %v)", kind, name, missing, have)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Update 4: a file removed from the config: the original is restored, or the
// file deleted if there was none. The admin policy makes the folder need no
// reboot.
func TestRemovedFileRestoresOriginal(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := "/etc/nodeconfd-test"
	config(t, "rendered-u4-a", ign(nil))
	config(t, "rendered-u4-b", ign(map[string]string{dir + "/existing.conf": "managed\n", dir + "/new.conf": "new\n"}))
	config(t, "rendered-u4-c", ign(nil))
	n, log := nodeWithPolicy(t, "u4", "rendered-u4-a", "nodeDisruptionPolicy:\n  files:\n  - path: "+dir+"/\n    actions: [{type: None}]\n")
	if err := os.MkdirAll(filepath.Join(n.Sys.Root, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.Sys.Root, dir, "existing.conf"), []byte("original\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	for _, step := range []string{"rendered-u4-b", "rendered-u4-c"} {
		if err := n.SetDesired(ctx, step); err != nil {
			t.Fatal(err)
		}
		if err := waitCurrent(ctx, log, step); err != nil {
			t.Fatal(err)
		}
		if step == "rendered-u4-b" && readNodeFile(t, n, dir+"/existing.conf") != "managed\n" {
			t.Fatal("managed file not written")
		}
	}
	if got := readNodeFile(t, n, dir+"/existing.conf"); got != "original\n" {
		t.Errorf("existing.conf = %q, want the original back", got)
	}
	fi, _ := os.Stat(filepath.Join(n.Sys.Root, dir, "existing.conf"))
	if fi == nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("restored mode %v, want 0640", fi)
	}
	if _, err := os.Stat(filepath.Join(n.Sys.Root, dir, "new.conf")); !os.IsNotExist(err) {
		t.Errorf("new.conf should be gone: %v", err)
	}
	if b := n.Sys.Boots(); b != 1 {
		t.Errorf("boots = %d, want 1", b)
	}
}

// waitCurrent waits until the status says the node runs config name and is
// Updated.
func waitCurrent(ctx context.Context, log *testbed.StatusLog, name string) error {
	for {
		st := log.Latest()
		if st.ConfigVersion != nil && st.ConfigVersion.Current == name {
			if c := log.Condition("Updated"); c != nil && c.Status == "True" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the node to run %s: %w; latest:\n%s", name, ctx.Err(), log.Describe())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
