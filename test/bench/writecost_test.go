package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// BenchmarkAPIServerWriteCost measures what one write of each kind a
// daemon sends costs the API server in CPU (its process_cpu_seconds_total),
// 50 nodes writing at once per iteration: a MachineConfigNode is a custom
// resource (JSON, OpenAPI schema, CEL rules, managed fields), and its
// writes are what a fleet's roll costs most (docs/fleet.md).
func BenchmarkAPIServerWriteCost(b *testing.B) {
	const nodes = 50
	ctx := context.Background()
	api, err := kubeapi.NewAPI(bed.CP.RestConfig())
	if err != nil {
		b.Fatal(err)
	}
	var clients []*kube.Client
	for i := range nodes {
		name := fmt.Sprintf("writecost-%d", i)
		if _, err := api.Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = api.Nodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		c := &kube.Client{API: api, NodeName: name}
		if _, _, err := c.EnsureMCN(ctx, status.NewMCN(name, "worker", "rendered-a"), nil); err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = api.MachineConfigNodes().Delete(context.Background(), name, metav1.DeleteOptions{}) })
		clients = append(clients, c)
	}
	for _, k := range []struct {
		name  string
		write func(c *kube.Client, round int) error
	}{
		{"MCNStatusPatch", func(c *kube.Client, round int) error {
			conds := status.Initial(metav1.Now())
			conds[0].Status, conds[0].Message = metav1.ConditionUnknown, fmt.Sprintf("round %d", round)
			return c.WriteStatus(ctx, status.Snapshot{Conditions: conds, Current: "rendered-a", Desired: "rendered-a"})
		}},
		{"MCNSpecPatch", func(c *kube.Client, round int) error {
			_, err := api.MachineConfigNodes().Patch(ctx, c.NodeName, types.MergePatchType,
				fmt.Appendf(nil, `{"spec":{"configVersion":{"desired":"rendered-%d"}}}`, round), metav1.PatchOptions{FieldManager: names.FieldManager})
			return err
		}},
		{"NodePatch", func(c *kube.Client, round int) error {
			_, err := api.Nodes().Patch(ctx, c.NodeName, types.MergePatchType,
				fmt.Appendf(nil, `{"metadata":{"annotations":{"writecost":"%d"}}}`, round), metav1.PatchOptions{FieldManager: names.FieldManager})
			return err
		}},
	} {
		b.Run(k.name, func(b *testing.B) {
			cpu0 := apiServerCPU(ctx, b)
			for round := 0; b.Loop(); round++ {
				var wg sync.WaitGroup
				for _, c := range clients {
					wg.Go(func() {
						if err := k.write(c, round); err != nil {
							b.Error(err)
						}
					})
				}
				wg.Wait()
			}
			cpu := apiServerCPU(ctx, b) - cpu0
			b.ReportMetric(cpu.Seconds()*1000/float64(nodes*b.N), "apiserver-cpu-ms/write")
		})
	}
}

// apiServerCPU is kube-apiserver's process_cpu_seconds_total.
func apiServerCPU(ctx context.Context, b *testing.B) time.Duration {
	raw, err := bed.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_cpu_seconds_total "); ok {
			s, err := strconv.ParseFloat(v, 64)
			if err != nil {
				b.Fatal(err)
			}
			return time.Duration(s * float64(time.Second))
		}
	}
	b.Fatal("no process_cpu_seconds_total on the API server's /metrics")
	return 0
}
