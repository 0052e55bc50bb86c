// Package drain tests the daemon's drainer (daemon/drain) on real parts: a
// real kube-apiserver and etcd (with the test control plane's disruption
// budget loop) and the stand-in kubelet, which removes evicted pods once
// their (scaled) grace period has passed. No controller-manager runs, so
// the tests create the pods a controller would, with owner references.
package drain

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

// client reaches the control plane shared by the package's tests; each test
// uses its own node and namespace.
var client kubernetes.Interface

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	dir, err := os.MkdirTemp("", "nodeconfd-drain-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: dir, NoCRDs: true, Log: os.Stderr})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the control plane:", err)
		os.Exit(1)
	}
	client = kubernetes.NewForConfigOrDie(cp.RestConfig())
	code := m.Run()
	_ = cp.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}
