package cluster

import (
	"context"
	"encoding/json"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// rebootSequence is the contract's sequence of condition transitions of an
// update that drains and reboots the node (as in test/e2e).
var rebootSequence = []string{
	"Updated=False", "UpdatePrepared=Unknown", "UpdateCompatible=Unknown", "UpdateCompatible=True", "UpdatePrepared=True",
	"UpdateExecuted=Unknown", "Cordoned=Unknown", "Cordoned=True", "Drained=Unknown", "Drained=True",
	"AppliedFilesAndOS=Unknown", "AppliedFilesAndOS=True", "UpdateExecuted=True",
	"UpdatePostActionComplete=Unknown", "RebootedNode=Unknown", "RebootedNode=True",
	"UpdatePostActionComplete=True",
	"UpdateComplete=Unknown", "HealthChecked=Unknown", "HealthChecked=True",
	"Uncordoned=Unknown", "Uncordoned=True", "UpdateComplete=True",
	"Resumed=True", "Updated=True",
}

// runtimeSequence is that of an update after one that rebooted the node,
// on the bed's containerd nodes, whose post action is containerd's (a
// restart, or nothing: no ReloadedCRIO): the new update first sets the
// previous one's conditions back to False.
var runtimeSequence = []string{
	"Updated=False", "UpdatePrepared=Unknown", "UpdateCompatible=Unknown",
	"UpdateExecuted=False", "Cordoned=False", "Drained=False", "AppliedFilesAndOS=False", "UpdatePostActionComplete=False",
	"RebootedNode=False", "UpdateComplete=False", "HealthChecked=False", "Uncordoned=False", "Resumed=False",
	"UpdateCompatible=True", "UpdatePrepared=True",
	"UpdateExecuted=Unknown", "AppliedFilesAndOS=Unknown", "AppliedFilesAndOS=True", "UpdateExecuted=True",
	"UpdatePostActionComplete=Unknown", "UpdatePostActionComplete=True",
	"UpdateComplete=Unknown", "UpdateComplete=True", "Resumed=True", "Updated=True",
}

const helloUnit = "[Unit]\nDescription=hello\n\n[Service]\nType=oneshot\nExecStart=/bin/true\n\n[Install]\nWantedBy=multi-user.target\n"

// TestDaemonSetOnRealNodes applies the release manifest (manifests/ with
// the image pushed to the bed's registry: testbed.StartCluster), then starts
// two real nodes, waits for the DaemonSet (each node pulls the daemon's
// image: pulledFromRegistry), then rolls out an update that drains and
// reboots both nodes (the kubelet restarts each daemon pod after
// the reboot, and the new container completes the update) and one that
// reloads CRI-O, and reads each pod's log with kubectl. A real Prometheus
// scrapes the daemons and the controller through the shipped objects
// (scrapedByPrometheus).
func TestDaemonSetOnRealNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Minute)
	defer cancel()
	names := []string{"kube-a", "kube-b"}
	createConfig(t, "rendered-worker-base", testbed.Ignition(nil))
	nodes, logs := startNodes(ctx, t, "rendered-worker-base", names...)
	ds := waitDaemonSet(ctx, t, int32(len(names)))
	if got, want := ds.Spec.Template.Spec.Containers[0].Image, bed.Images().DaemonRef; got != want {
		t.Errorf("the DaemonSet runs image %s, want the one built and pushed, %s", got, want)
	}
	pulledFromRegistry(ctx, t, names)
	for _, name := range names {
		if err := logs[name].WaitFor(ctx, "Updated", "True", ""); err != nil {
			t.Fatalf("node %s: %v", name, err)
		}
		reportStart(ctx, t, name, logs[name])
	}
	controllerRuns(ctx, t, names[0])
	scrapedByPrometheus(ctx, t, nodes, names[0])
	workload(ctx, t, "web", 2)

	pauseWorkers(ctx, t)
	first := renderConfig(ctx, t, testbed.Ignition(map[string]string{"/etc/motd.d/cluster": "updated by nodeconfd\n"},
		`"systemd":{"units":[{"name":"hello.service","enabled":true,"contents":`+quote(helloUnit)+`}]}`))
	rollOut(ctx, t, nodes, logs, first, rebootSequence)
	for _, name := range names {
		if b := nodes[name].Sys.Boots(); b != 2 {
			t.Errorf("node %s: boots = %d, want 2 (one reboot)", name, b)
		}
		if restarts := daemonPod(ctx, t, name).Status.ContainerStatuses[0].RestartCount; restarts < 1 {
			t.Errorf("node %s: the daemon's container restarted %d times, want at least once (after the reboot)", name, restarts)
		}
	}
	waitDeployment(ctx, t, "web", 2)
	for _, name := range names {
		wantEvents(ctx, t, name, "MachineConfigNode", "UpdateCompatible", "Drained", "RebootedNode", "Uncordoned")
		wantEvents(ctx, t, name, "Node", "Cordoned", "Drained", "RebootedNode")
	}

	// containerd's own files on its real nodes: a registry host file (read per pull: nothing to do) and a
	// config drop-in (containerd restarted, its containers running on).
	ctrdFiles := map[string]string{"/etc/motd.d/cluster": "updated by nodeconfd\n",
		"/etc/containerd/certs.d/registry.example.com/hosts.toml": "server = \"https://registry.example.com\"\n",
		"/etc/containerd/conf.d/90-nodeconfd-test.toml":           "# a drop-in nodeconfd wrote\n"}
	second := renderConfig(ctx, t, testbed.Ignition(ctrdFiles,
		`"systemd":{"units":[{"name":"hello.service","enabled":true,"contents":`+quote(helloUnit)+`}]}`))
	before := runtimeStateOf(ctx, t, nodes)
	rollOut(ctx, t, nodes, logs, second, runtimeSequence)
	checkRuntimeRestarted(ctx, t, nodes, before)
	for _, name := range names {
		if c, _ := nodes[name].Sys.CRIOReloads(); c != 0 {
			t.Errorf("node %s: CRI-O reloads = %d on a containerd node, want 0", name, c)
		}
		if b := nodes[name].Sys.Boots(); b != 2 {
			t.Errorf("node %s: boots = %d, want still 2", name, b)
		}
		if got := logs[name].Condition("UpdatePostActionComplete").Message; got != "Restarted containerd.service" {
			t.Errorf("node %s: post action %q, want a restart of containerd.service", name, got)
		}
		checkLogs(ctx, t, name)
		reportWorkingSet(ctx, t, name)
	}
	unit := `"systemd":{"units":[{"name":"hello.service","enabled":true,"contents":` + quote(helloUnit) + `}]}`
	surgeDrain(ctx, t, nodes, logs, testbed.Ignition(map[string]string{
		"/etc/motd.d/cluster": "updated by nodeconfd\n", "/etc/containers/registries.d/mirror.yaml": "docker:\n  example.com: {}\n",
		"/etc/motd.d/surge": "after the surge\n"}, unit))
	files := map[string]string{"/etc/motd.d/cluster": "updated by nodeconfd\n",
		"/etc/containers/registries.d/mirror.yaml": "docker:\n  example.com: {}\n", "/etc/motd.d/pdb": "after the budget\n"}
	name := blockedByPDB(ctx, t, nodes, logs, testbed.Ignition(files, unit))
	deleteMidWrite(ctx, t, nodes[name], logs[name], files, map[string]string{
		"/etc/containers/registries.d/mirror.yaml": "docker:\n  example.com: {}\n  example.org: {}\n",
		"/etc/containers/registries.d/second.yaml": "docker:\n  example.net: {}\n"}, unit)
}

// rollOut sets config as every node's desired one, waits until all run it
// and checks each node's transitions.
func rollOut(ctx context.Context, t *testing.T, nodes map[string]*testbed.KubeNode, logs map[string]*testbed.StatusLog, config string, want []string) {
	t.Helper()
	begin := time.Now()
	from := map[string]int{}
	for name := range nodes {
		from[name] = logs[name].Len()
	}
	setDesired(ctx, t, nodes, config)
	for name := range nodes {
		if err := waitCurrent(ctx, logs[name], from[name], config); err != nil {
			t.Fatalf("node %s: %v", name, err)
		}
		wantSeq(t, name, logs[name].Transitions(from[name]), want)
	}
	t.Logf("%s rolled out to %d nodes in %s", config, len(nodes), time.Since(begin).Round(100*time.Millisecond))
}

// setDesired sets config as the desired one of nodes, as a rollout would.
func setDesired(ctx context.Context, t *testing.T, nodes map[string]*testbed.KubeNode, config string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		"machineconfiguration.openshift.io/desiredConfig": config}}})
	for name := range nodes {
		if _, err := bed.Kube.CoreV1().Nodes().Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// reportStart logs the time from the daemon container's start to its first
// status write.
func reportStart(ctx context.Context, t *testing.T, node string, log *testbed.StatusLog) {
	pod := daemonPod(ctx, t, node)
	first, ok := log.FirstStatus()
	if !ok || len(pod.Status.ContainerStatuses) == 0 || pod.Status.ContainerStatuses[0].State.Running == nil {
		return
	}
	started := pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time
	t.Logf("node %s: daemon container started %s, first status write %s later (start time has 1 s resolution)",
		node, started.Format(time.RFC3339), first.Sub(started).Round(10*time.Millisecond))
}

// checkLogs reads the daemon pod's log through the API server and the
// kubelet (kubectl logs): structured lines, none a denial of the admission
// policy or RBAC.
func checkLogs(ctx context.Context, t *testing.T, node string) {
	t.Helper()
	pod := daemonPod(ctx, t, node)
	for _, previous := range []bool{false, true} {
		out, err := bed.Kubectl(ctx, "logs", "-n", testbed.Namespace, pod.Name, "--previous="+strconv.FormatBool(previous))
		if err != nil {
			t.Errorf("node %s: kubectl logs --previous=%v: %v\n%s", node, previous, err, out)
			continue
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		for _, line := range lines {
			if !zapLine(line) {
				t.Errorf("node %s: a log line that is not a structured zap line: %q", node, line)
				break
			}
			for _, deny := range []string{"denied request", "ValidatingAdmissionPolicy", "is forbidden"} {
				if strings.Contains(line, deny) {
					t.Errorf("node %s: a denial in the daemon's log: %s", node, line)
				}
			}
		}
		t.Logf("node %s: kubectl logs --previous=%v: %d structured lines", node, previous, len(lines))
	}
}

// zapLine tells whether line is one of zap's console lines: time, level,
// the logger's name if it has one, caller and message, then the fields as
// a JSON object if there are any.
func zapLine(line string) bool {
	f := strings.Split(line, "\t")
	if len(f) < 4 || len(f) > 6 {
		return false
	}
	if _, err := time.Parse(time.RFC3339, f[0]); err != nil {
		return false
	}
	switch f[1] {
	case "DEBUG", "INFO", "WARN", "ERROR", "DPANIC", "PANIC", "FATAL":
	default:
		return false
	}
	last := f[len(f)-1]
	return !strings.HasPrefix(last, "{") || json.Valid([]byte(last))
}

// reportWorkingSet logs the daemon container's working set as the kubelet
// reports it (/stats/summary, through the API server's node proxy).
func reportWorkingSet(ctx context.Context, t *testing.T, node string) {
	t.Helper()
	raw, err := bed.Kube.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy/stats/summary").DoRaw(ctx)
	if err != nil {
		t.Errorf("node %s: reading the kubelet's /stats/summary: %v", node, err)
		return
	}
	var summary struct {
		Pods []struct {
			PodRef struct {
				Name, Namespace string
			}
			Containers []struct {
				Name   string
				Memory struct {
					WorkingSetBytes *uint64
				}
			}
		}
	}
	if err := json.Unmarshal(raw, &summary); err != nil {
		t.Fatal(err)
	}
	for _, p := range summary.Pods {
		for _, c := range p.Containers {
			if p.PodRef.Namespace == testbed.Namespace && c.Name == "nodeconfd" && c.Memory.WorkingSetBytes != nil {
				t.Logf("node %s: the daemon container's working set (kubelet /stats/summary): %.1f MiB",
					node, float64(*c.Memory.WorkingSetBytes)/(1<<20))
				return
			}
		}
	}
	t.Errorf("node %s: no working set of the daemon's container in /stats/summary:\n%s", node, raw)
}

// workload creates a Deployment of replicas idle pods spread over the
// nodes, for the drains to evict and the controllers to recreate.
func workload(ctx context.Context, t *testing.T, name string, replicas int32) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{{Name: "idle", Image: bed.Images().Workload,
						ImagePullPolicy: corev1.PullIfNotPresent}},
				},
			},
		},
	}
	if _, err := bed.Kube.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDeployment(ctx, t, name, replicas)
	// Pod networking: each pod has an address of its node's CNI bridge.
	pods, err := bed.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		t.Fatal(err)
	}
	podNet := netip.MustParsePrefix("10.244.0.0/16")
	for _, p := range pods.Items {
		if ip, err := netip.ParseAddr(p.Status.PodIP); err != nil || !podNet.Contains(ip) {
			t.Errorf("pod %s on node %s has IP %q, want one of the nodes' pod networks %s", p.Name, p.Spec.NodeName, p.Status.PodIP, podNet)
		}
	}
}

func waitDeployment(ctx context.Context, t *testing.T, name string, replicas int32) {
	t.Helper()
	var d *appsv1.Deployment
	err := wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		var err error
		d, err = bed.Kube.AppsV1().Deployments("default").Get(ctx, name, metav1.GetOptions{})
		return err == nil && d.Status.ReadyReplicas == replicas && d.Status.UpdatedReplicas == replicas, err
	})
	if err != nil {
		t.Fatalf("waiting for Deployment %s to have %d ready pods: %v", name, replicas, err)
	}
}

func createConfig(t *testing.T, name, ignition string) {
	t.Helper()
	if err := bed.CreateConfig(context.Background(), testbed.MachineConfig(name, ignition)); err != nil {
		t.Fatal(err)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// runtimeState is each node's containerd main PID and the containers of
// the Deployment web, before containerd's restart.
type runtimeState struct {
	pids       map[string]string
	containers map[string]string // pod name -> container ID
}

func runtimeStateOf(ctx context.Context, t *testing.T, nodes map[string]*testbed.KubeNode) runtimeState {
	t.Helper()
	st := runtimeState{pids: map[string]string{}, containers: map[string]string{}}
	for name, n := range nodes {
		out, err := n.Sys.Exec(ctx, "systemctl", "show", "-p", "MainPID", "--value", "containerd.service")
		if err != nil {
			t.Fatalf("node %s: containerd's main PID: %v", name, err)
		}
		st.pids[name] = strings.TrimSpace(string(out))
	}
	pods, err := bed.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if len(p.Status.ContainerStatuses) == 1 && p.DeletionTimestamp == nil {
			st.containers[p.Name] = p.Status.ContainerStatuses[0].ContainerID
		}
	}
	return st
}

// checkRuntimeRestarted checks that containerd was restarted on every node
// (a new main PID) and that the Deployment's containers ran on through it:
// the same pods, the same containers, still ready.
func checkRuntimeRestarted(ctx context.Context, t *testing.T, nodes map[string]*testbed.KubeNode, before runtimeState) {
	t.Helper()
	after := runtimeStateOf(ctx, t, nodes)
	for name, pid := range before.pids {
		if after.pids[name] == pid {
			t.Errorf("node %s: containerd's main PID is still %s: not restarted", name, pid)
		}
	}
	for pod, id := range before.containers {
		if after.containers[pod] != id {
			t.Errorf("pod %s: container %q before containerd's restart, %q after: its container did not run on", pod, id,
				after.containers[pod])
		}
	}
	waitDeployment(ctx, t, "web", 2)
	t.Logf("containerd restarted on %d nodes; %d containers of Deployment web ran on", len(before.pids), len(before.containers))
}
