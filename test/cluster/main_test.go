// Package cluster runs the daemon as its users run it: the release manifest
// (manifests/ with the image pushed to the bed's registry) applied to a bed
// of real nodes (testbed.StartCluster: kube-scheduler and
// kube-controller-manager beside the API server, a registry, and in each
// node a kubelet with its own credentials and containerd), where the
// DaemonSet's pods run the release image pulled from the registry, updates reboot the nodes for real and the kubelet
// restarts the pods, and `kubectl logs` reads what the daemon wrote.
//
// The first run on a machine builds the node stack (kubelet, scheduler,
// controller manager, containerd; hack/build-nodestack.sh) and the real-node
// image; later runs find them in ~/.cache/nodeconfd.
package cluster

import (
	"testing"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// bed is shared by the package's tests; each test uses its own node names.
var bed *testbed.Bed

func TestMain(m *testing.M) {
	testbed.ClusterMain(m, "nodeconfd-cluster-", func(b *testbed.Bed) { bed = b })
}
