package phases_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// A desired config the node's rule does not accept (here "b": not rendered-worker-…) is
// refused in prepare: UpdateCompatible=False naming it, nothing cordoned, nothing written.
func TestRunnerRefusesForeignConfig(t *testing.T) {
	pattern, err := plan.ParseConfigPattern(plan.DefaultConfigPattern)
	if err != nil {
		t.Fatal(err)
	}
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	r.Env.ConfigRule = pattern.For("worker")
	err = r.Run(context.Background())
	var ce *plan.ConfigError
	if !errors.As(err, &ce) || ce.Object != "b" || ce.Field != "metadata.name" {
		t.Fatalf("Run: %v, want a ConfigError naming MachineConfig b's metadata.name", err)
	}
	r.Fail(context.Background(), err)
	c := status.Find(w.last, status.UpdateCompatible)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, `MachineConfig "b": metadata.name: not a rendered config of this node's pool "worker"`) {
		t.Errorf("UpdateCompatible = %s %q", c.Status, c.Message)
	}
	if d := status.Find(w.last, status.NodeDegraded); d.Status != metav1.ConditionTrue {
		t.Errorf("NodeDegraded = %s", d.Status)
	}
	if len(cl.calls) != 0 || len(h.files) != 0 || len(units.CallLog()) != 0 {
		t.Errorf("touched the node: cluster %v, files %v, systemd %v", cl.calls, h.files, units.CallLog())
	}
}
