// Package kubelet is a stand-in kubelet for tests against the controlplane package.
//
// It registers a Node and keeps it Ready, marks the pods bound to it (spec.nodeName set by the
// test; there is no scheduler) Running and Ready, and removes pods being deleted or evicted
// once their grace period has passed, as a kubelet does after stopping the containers. Nothing
// runs: there are no containers, volumes or probes.
package kubelet

import (
	"context"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Options configure Start.
type Options struct {
	// GracePeriodScale multiplies the grace period of a deleted pod before it is removed;
	// zero means 1. Use a small value (0.01) to make a 30s grace period last 0.3s.
	GracePeriodScale float64
	// Labels are added to the Node's labels when it is created.
	Labels map[string]string
	// HeartbeatInterval is how often the Node's Ready condition is refreshed (and the Node
	// recreated if it was deleted). Zero means 10s.
	HeartbeatInterval time.Duration
	// ContainerRuntimeVersion is the Node's status.nodeInfo.containerRuntimeVersion
	// ("containerd://2.1.0"); empty means "testbed://1.0", a runtime no
	// rules are written for.
	ContainerRuntimeVersion string
}

// Kubelet runs until Stop.
type Kubelet struct {
	client   kubernetes.Interface
	nodeName string
	opts     Options
	subnet   byte // third octet of the pod IPs handed out on this node

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex // guards nextIP
	nextIP int
}

// Start registers the node (if missing) and starts serving its pods.
func Start(ctx context.Context, client kubernetes.Interface, nodeName string, opts Options) (*Kubelet, error) {
	if opts.GracePeriodScale == 0 {
		opts.GracePeriodScale = 1
	}
	if opts.HeartbeatInterval == 0 {
		opts.HeartbeatInterval = 10 * time.Second
	}
	h := fnv.New32a()
	h.Write([]byte(nodeName))
	k := &Kubelet{client: client, nodeName: nodeName, opts: opts, subnet: byte(h.Sum32() % 250)}
	if err := k.ensureNode(ctx); err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	k.cancel = cancel
	pods, err := k.startPodWorker(runCtx)
	if err != nil {
		cancel()
		return nil, err
	}
	k.wg.Add(2)
	go func() {
		defer k.wg.Done()
		pods.run(runCtx)
	}()
	go func() {
		defer k.wg.Done()
		wait.UntilWithContext(runCtx, func(ctx context.Context) { _ = k.ensureNode(ctx) }, opts.HeartbeatInterval)
	}()
	return k, nil
}

// Stop ends the kubelet's goroutines and waits for them. The Node and its pods stay.
func (k *Kubelet) Stop() {
	k.cancel()
	k.wg.Wait()
}

// NodeName returns the name of the node this kubelet serves.
func (k *Kubelet) NodeName() string { return k.nodeName }

// ensureNode creates the Node if it is missing and sets its Ready condition True with a fresh
// heartbeat.
func (k *Kubelet) ensureNode(ctx context.Context) error {
	_, err := k.client.CoreV1().Nodes().Get(ctx, k.nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = k.client.CoreV1().Nodes().Create(ctx, k.newNode(), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("registering node %s: %w", k.nodeName, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := k.client.CoreV1().Nodes().Get(ctx, k.nodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Status = k.nodeStatus(node.Status)
		_, err = k.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("updating status of node %s: %w", k.nodeName, err)
	}
	return nil
}

func (k *Kubelet) newNode() *corev1.Node {
	labels := map[string]string{
		"kubernetes.io/hostname":         k.nodeName,
		"kubernetes.io/os":               "linux",
		"kubernetes.io/arch":             "amd64",
		"node-role.kubernetes.io/worker": "",
	}
	for key, v := range k.opts.Labels {
		labels[key] = v
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: k.nodeName, Labels: labels}}
}

// nodeStatus returns old with capacity, addresses and a Ready heartbeat filled in.
func (k *Kubelet) nodeStatus(old corev1.NodeStatus) corev1.NodeStatus {
	now := metav1.Now()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("4"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	s := old
	s.Capacity = capacity
	s.Allocatable = capacity
	s.Phase = corev1.NodeRunning
	s.Addresses = []corev1.NodeAddress{
		{Type: corev1.NodeInternalIP, Address: k.nodeIP()},
		{Type: corev1.NodeHostName, Address: k.nodeName},
	}
	s.NodeInfo = corev1.NodeSystemInfo{
		OperatingSystem:         "linux",
		Architecture:            "amd64",
		KubeletVersion:          "v1.37.2-testbed",
		ContainerRuntimeVersion: k.runtimeVersion(),
		OSImage:                 "nodeconfd testbed",
	}
	ready := corev1.NodeCondition{
		Type:               corev1.NodeReady,
		Status:             corev1.ConditionTrue,
		Reason:             "KubeletReady",
		Message:            "stand-in kubelet is posting ready status",
		LastHeartbeatTime:  now,
		LastTransitionTime: now,
	}
	var conds []corev1.NodeCondition
	for _, c := range old.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				ready.LastTransitionTime = c.LastTransitionTime
			}
			continue
		}
		conds = append(conds, c)
	}
	s.Conditions = append(conds, ready)
	return s
}

func (k *Kubelet) runtimeVersion() string {
	if k.opts.ContainerRuntimeVersion != "" {
		return k.opts.ContainerRuntimeVersion
	}
	return "testbed://1.0"
}

func (k *Kubelet) nodeIP() string { return fmt.Sprintf("10.1.%d.1", k.subnet) }

// podIP hands out the next pod IP of this node.
func (k *Kubelet) podIP() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.nextIP++
	return fmt.Sprintf("10.244.%d.%d", k.subnet, k.nextIP%250+2)
}
