package manifests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/daemon/osupdate"
)

// TestDaemonSetHardened checks the DaemonSet as the API server stores it: a grace period past
// the longest step that ignores SIGTERM, no probe that could restart the daemon mid-update,
// metrics on the node's IP only and guarded, a memory limit, Linux nodes only, the release's image.
func TestDaemonSetHardened(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp := start(ctx, t)
	kubectl(t, cp, "apply", "-f", filepath.Join(repoRoot, "manifests"))
	ds, err := kubernetes.NewForConfigOrDie(cp.RestConfig()).AppsV1().DaemonSets("nodeconfd").Get(ctx, "nodeconfd", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkDaemonSet(t, ds)
}

func checkDaemonSet(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	spec := ds.Spec.Template.Spec
	if g := spec.TerminationGracePeriodSeconds; g == nil || time.Duration(*g)*time.Second < longestPull() {
		t.Errorf("terminationGracePeriodSeconds %v, want at least the longest OS pull, %s", g, longestPull())
	}
	if spec.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("nodeSelector %v, want kubernetes.io/os: linux", spec.NodeSelector)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("%d containers, want 1", len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.LivenessProbe != nil || c.ReadinessProbe != nil || c.StartupProbe != nil {
		t.Error("the daemon has a probe: it could restart the daemon in the middle of an update")
	}
	addr := ""
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--metrics-address="); ok {
			addr = v
		}
	}
	// The node's own IP (not every host interface), the page guarded (no --metrics-auth=none),
	// the port named for the Service and the PodMonitor.
	if addr != "[$(HOST_IP)]:8798" || len(c.Ports) != 1 || c.Ports[0].Name != "https-metrics" || c.Ports[0].ContainerPort != 8798 {
		t.Errorf("metrics address %q and ports %v: want [$(HOST_IP)]:8798 and the one port https-metrics", addr, c.Ports)
	}
	if slices.Contains(c.Args, "--metrics-auth=none") {
		t.Error("the DaemonSet serves /metrics to anyone: --metrics-auth=none")
	}
	hostIP := false
	for _, e := range c.Env {
		hostIP = hostIP || e.Name == "HOST_IP" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil &&
			e.ValueFrom.FieldRef.FieldPath == "status.hostIP"
	}
	if !hostIP {
		t.Error("no HOST_IP from status.hostIP for --metrics-address")
	}
	if lim, ok := c.Resources.Limits["memory"]; !ok || lim.Cmp(resource.MustParse("512Mi")) > 0 {
		t.Errorf("memory limit %v, want one (at most 512Mi)", c.Resources.Limits)
	}
	version, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "quay.io/nodeconfd/nodeconfd:" + strings.TrimSpace(string(version)); c.Image != want {
		t.Errorf("image %s, want %s (the VERSION file)", c.Image, want)
	}
}

// longestPull is the longest OS image pull with the default flags: every attempt runs to its
// timeout, with the retry waits between them.
func longestPull() time.Duration {
	r := osupdate.DefaultRetry()
	total := time.Duration(r.Attempts) * osupdate.DefaultTimeout
	wait := r.Initial
	for range r.Attempts - 1 {
		total += min(wait, r.Max)
		wait *= 2
	}
	return total
}

// TestVersion: the binary built by the Makefile reports the VERSION file, the DaemonSet's tag.
func TestVersion(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "nodeconfd")
	build := exec.Command("make", "-s", "build", "OUT="+bin)
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("make build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("nodeconfd version: %v", err)
	}
	version, err := os.ReadFile(filepath.Join(repoRoot, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(out)) != strings.TrimSpace(string(version)) {
		t.Errorf("nodeconfd version = %q, want the VERSION file's %q", out, version)
	}
}
