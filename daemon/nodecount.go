package daemon

import (
	"context"
	"strconv"
	"strings"

	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"go.uber.org/zap"
)

// NodeCountFileName is the state file that keeps the cluster's node count
// as last counted (one LIST of one Node, kube.Client.CountNodes). A daemon
// that ran on the node before reads it at its start instead of counting:
// a whole fleet's daemons starting at once (every node booting after a
// power cut, a DaemonSet rollout with no limit) sent the API server a LIST
// each at once, and 2,000 of them took that LIST's p99 to 2 s on the test
// bed (make bench-fleet). The count sizes the watches' reconnect window
// after an outage (kube.Client.ReconnectJitter), and each new config's
// spread counts again, which keeps it fresh.
const NodeCountFileName = "cluster-nodes"

// countNodes counts the cluster's nodes and keeps the count on the node
// when it changed.
func (d *Daemon) countNodes(ctx context.Context) (int, error) {
	n, err := d.API.CountNodes(ctx)
	if err != nil || n == d.keptNodes || n < 1 || n > kube.MaxNodes {
		return n, err
	}
	if werr := d.Env.Host.WriteState(NodeCountFileName, []byte(strconv.Itoa(n)+"\n")); werr != nil {
		d.Log.Warn("Cannot keep the cluster's node count on the node; the next start counts again",
			zap.String("node", d.API.NodeName), zap.Error(werr))
		return n, nil
	}
	d.keptNodes = n
	return n, nil
}

// keptNodeCount reads the count kept on the node, and gives it to the
// client; false when there is none, or it is not a count.
func (d *Daemon) keptNodeCount() bool {
	data, err := d.Env.Host.ReadState(NodeCountFileName)
	if err != nil {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || n < 1 || n > kube.MaxNodes {
		d.Log.Warn("The cluster's node count kept on the node is not a count; counting again",
			zap.String("node", d.API.NodeName), zap.String("file", NodeCountFileName))
		return false
	}
	d.keptNodes = n
	d.API.SetNodeCount(n)
	return true
}
