package cluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/nodeconfd/nodeconfd/cluster/surge"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// surgeDrain: a one-replica Deployment that opted in to surges, under a PodDisruptionBudget of
// minAvailable 1, whose pod is on the node a reboot update drains. With a
// HorizontalPodAutoscaler on it no surge could free the pod, so the update waits before its
// cordon, and Cordoned says why. Once the autoscaler is gone the update cordons and its drain
// raises the replicas to 2; the daemon's process is SIGKILLed
// then, before the new pod is Ready (its readiness probe waits 4 s); the kubelet restarts it,
// it puts the replicas back, surges again, and the drain finishes. Sampled every 100 ms, the
// Deployment never has zero Ready pods, and its replicas end where they began. The replicas are
// changed by the shipped controller, on the daemon's request, with its own token.
func surgeDrain(ctx context.Context, t *testing.T, nodes map[string]*testbed.KubeNode, logs map[string]*testbed.StatusLog,
	ignition string) {
	t.Helper()
	soloWorkload(ctx, t)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "solo", Namespace: "default"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: new(int32(1)), MaxReplicas: 2,
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "solo"}}}
	if _, err := bed.Kube.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	name := soloNode(ctx, t)
	config := renderConfig(ctx, t, ignition)
	from := logs[name].Len()
	samples := sampleSolo(ctx, t)
	setDesired(ctx, t, map[string]*testbed.KubeNode{name: nodes[name]}, config)
	const refused = "cannot surge: HorizontalPodAutoscaler solo scales Deployment default/solo"
	if _, err := logs[name].WaitStatus(ctx, from, func(st mcfgv1.MachineConfigNodeStatus) bool {
		c := testbed.Find(st, "Cordoned")
		return c != nil && c.Reason == "Waiting" && strings.Contains(c.Message, refused)
	}); err != nil {
		t.Fatalf("node %s: Cordoned never said %q: %v", name, refused, err)
	}
	t.Logf("node %s: %s", name, testbed.Find(logs[name].Latest(), "Cordoned").Message)
	if err := bed.Kube.AutoscalingV2().HorizontalPodAutoscalers("default").Delete(ctx, "solo", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	killMidSurge(ctx, t, name)
	if err := waitCurrent(ctx, logs[name], from, config); err != nil {
		t.Fatalf("node %s after the autoscaler went: %v", name, err)
	}
	drained := ""
	for _, c := range logs[name].History("Drained") {
		if c.Status == metav1.ConditionTrue {
			drained = c.Message
		}
	}
	if want := "surged Deployment default/solo (1 → 2 → 1 replicas)"; !strings.Contains(drained, want) {
		t.Errorf("node %s: Drained %q, want it to name the surge %q", name, drained, want)
	}
	waitDeployment(ctx, t, "solo", 1)
	minReady, n := samples.stop()
	t.Logf("Deployment solo sampled %d times every 100 ms: at least %d Ready pods, at most %d replicas", n, minReady, samples.maxReplicas)
	if minReady < 1 {
		t.Errorf("Deployment solo had %d Ready pods at one sample, want never fewer than 1", minReady)
	}
	if dep, err := bed.Kube.AppsV1().Deployments("default").Get(ctx, "solo", metav1.GetOptions{}); err != nil || *dep.Spec.Replicas != 1 {
		t.Errorf("Deployment solo ends with %v replicas (%v), want 1 as it began", dep.Spec.Replicas, err)
	}
	leases, err := bed.Kube.CoordinationV1().Leases(testbed.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "nodeconfd.io/surge-node"})
	if err != nil || len(leases.Items) != 0 {
		t.Errorf("surge slots left: %d (%v)", len(leases.Items), err)
	}
	wantEvents(ctx, t, "solo", "Deployment", "DrainSurge", "DrainSurgeEnded")
	// The later drains of the test have solo out of their way.
	if err := bed.Kube.AppsV1().Deployments("default").Delete(ctx, "solo", metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
	if err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, "solo", metav1.DeleteOptions{}); err != nil {
		t.Error(err)
	}
}

// soloWorkload creates the Deployment solo (one replica, opted in, Ready 4 s after it starts)
// and its budget, and waits until the budget allows no disruption.
func soloWorkload(ctx context.Context, t *testing.T) {
	t.Helper()
	labels := map[string]string{"app": "solo"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "solo", Namespace: "default", Annotations: map[string]string{surge.Annotation: "true"}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					// Away from the controller's node if it can: that node's drain evicts the
					// controller's two replicas, which the bed runs on it alone (a cluster spreads
					// them over two nodes), and the surge is the controller's to answer. The
					// surge's new pod may still go there.
					Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
						PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{Weight: 100,
							Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
								Key: testbed.ControllerNodeLabel, Operator: corev1.NodeSelectorOpDoesNotExist}}}}}}},
					TerminationGracePeriodSeconds: new(int64),
					Containers: []corev1.Container{{Name: "idle", Image: bed.Images().Workload, ImagePullPolicy: corev1.PullIfNotPresent,
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
							Command: []string{"/idle", "ready"}}}, InitialDelaySeconds: 4, PeriodSeconds: 1}}},
				},
			},
		},
	}
	if _, err := bed.Kube.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "solo", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	if _, err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitDeployment(ctx, t, "solo", 1)
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		b, err := bed.Kube.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "solo", metav1.GetOptions{})
		return err == nil && b.Status.ObservedGeneration == b.Generation && b.Status.CurrentHealthy == 1, nil
	})
	if err != nil {
		t.Fatalf("budget solo never counted its pod: %v", err)
	}
}

// soloNode is the node that runs solo's pod.
func soloNode(ctx context.Context, t *testing.T) string {
	t.Helper()
	pods, err := bed.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=solo"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("listing solo's pod: %v (%d pods)", err, len(pods.Items))
	}
	return pods.Items[0].Spec.NodeName
}

// killMidSurge waits for the surge (solo's replicas at 2), SIGKILLs the daemon of node, and
// checks the kill came before the replicas went back.
func killMidSurge(ctx context.Context, t *testing.T, node string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		dep, err := bed.Kube.AppsV1().Deployments("default").Get(ctx, "solo", metav1.GetOptions{})
		return err == nil && *dep.Spec.Replicas == 2, nil
	})
	if err != nil {
		t.Fatalf("the drain never surged solo: %v", err)
	}
	pid := daemonPID(t, node)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing the daemon of node %s (pid %d): %v", node, pid, err)
	}
	dep, err := bed.Kube.AppsV1().Deployments("default").Get(ctx, "solo", metav1.GetOptions{})
	if err != nil || *dep.Spec.Replicas != 2 {
		t.Fatalf("the daemon was killed after the surge ended (replicas %v, %v): the test missed its window", dep.Spec.Replicas, err)
	}
	t.Logf("node %s: daemon (pid %d) SIGKILLed with solo at 2 replicas", node, pid)
}

// daemonPID finds the daemon's process of node among the host's: the nodes' containers share
// the host's kernel, and each daemon's environment names its node.
func daemonPID(t *testing.T, node string) int {
	t.Helper()
	procs, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range procs {
		env, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(env, []byte("\x00NODE_NAME="+node+"\x00")) && !bytes.HasPrefix(env, []byte("NODE_NAME="+node+"\x00")) {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join(filepath.Dir(p), "cmdline"))
		if err != nil || !bytes.Contains(cmd, []byte("start\x00--root-mount=/rootfs")) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		return pid
	}
	t.Fatalf("no daemon process of node %s on the host", node)
	return 0
}

// soloSamples counts solo's Ready pods (not terminating) every 100 ms.
type soloSamples struct {
	mu                       sync.Mutex
	n, minReady, maxReplicas int
	cancel                   context.CancelFunc
	done                     chan struct{}
}

func sampleSolo(ctx context.Context, t *testing.T) *soloSamples {
	ctx, cancel := context.WithCancel(ctx)
	s := &soloSamples{minReady: 1 << 30, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for ctx.Err() == nil {
			pods, err := bed.Kube.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=solo"})
			if err == nil {
				ready := 0
				for _, p := range pods.Items {
					if p.DeletionTimestamp == nil && podReady(p) {
						ready++
					}
				}
				s.mu.Lock()
				s.n++
				s.minReady, s.maxReplicas = min(s.minReady, ready), max(s.maxReplicas, len(pods.Items))
				s.mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *soloSamples) stop() (minReady, n int) {
	s.cancel()
	<-s.done
	return s.minReady, s.n
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
