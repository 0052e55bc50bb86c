package phases_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/daemon/systemd/systemdtest"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/phases/status"
)

// provenance is a phases.Provenance that refuses every config but ok, and
// counts its calls.
type provenance struct {
	ok    string
	calls []string
}

func (p *provenance) Verify(_ context.Context, mc *mcfgv1.MachineConfig) error {
	p.calls = append(p.calls, mc.Name)
	if mc.Name == p.ok {
		return nil
	}
	return &plan.ConfigError{Object: mc.Name, Field: "spec.config.storage.files", Msg: "not the merge of pool worker's MachineConfigs"}
}

// A desired config its pool's MachineConfigs do not render to is refused
// in prepare, before anything is touched: UpdateCompatible=False naming
// the config and the field, nothing cordoned, written or restarted.
func TestRunnerRefusesUnverifiedConfig(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	r := newRunner(configs{"a": empty, "b": file("/etc/motd", "x")}, h, cl, units, w)
	p := &provenance{}
	r.Env.Provenance = p
	err := r.Run(context.Background())
	var ce *plan.ConfigError
	if !errors.As(err, &ce) || ce.Object != "b" || ce.Field != "spec.config.storage.files" {
		t.Fatalf("Run: %v, want a ConfigError naming b's spec.config.storage.files", err)
	}
	r.Fail(context.Background(), err)
	c := status.Find(w.last, status.UpdateCompatible)
	if c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, `MachineConfig "b": spec.config.storage.files: not the merge`) {
		t.Errorf("UpdateCompatible = %s %q", c.Status, c.Message)
	}
	if len(cl.calls) != 0 || len(h.files) != 0 || len(units.CallLog()) != 0 {
		t.Errorf("touched the node: cluster %v, files %v, systemd %v", cl.calls, h.files, units.CallLog())
	}
	if len(p.calls) != 1 {
		t.Errorf("verified %v, want b once", p.calls)
	}
}

// A verified config is applied and recorded as run; handed back later, it
// is taken without a check, the spec unchanged, and checked again when its
// spec changed (a config re-created under the same name).
func TestRunnerTrustsConfigsRunBefore(t *testing.T) {
	h := &host{files: map[string]string{}, state: map[string][]byte{}}
	cl, units, w := &cluster{}, &systemdtest.Fake{}, &writes{}
	cfgs := configs{"a": empty, "b": file("/var/lib/kubelet/config.json", "x")}
	r := newRunner(cfgs, h, cl, units, w)
	p := &provenance{ok: "b"}
	r.Env.Provenance = p
	if err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var ran []map[string]string
	if err := json.Unmarshal(h.state[phases.RanFileName], &ran); err != nil || len(ran) != 1 || ran[0]["name"] != "b" {
		t.Fatalf("%s = %s (%v), want b", phases.RanFileName, h.state[phases.RanFileName], err)
	}

	back := func(cfgs configs) error {
		r := newRunner(cfgs, h, cl, units, w)
		r.Env.Provenance = p
		r.Record.Current, r.Record.Desired = "c", "b"
		r.NodeCurrent = "c"
		return r.Run(context.Background())
	}
	cfgs["c"] = file("/var/lib/kubelet/config.json", "y")
	p.calls = nil
	if err := back(cfgs); err != nil {
		t.Fatalf("handing b back: %v", err)
	}
	if len(p.calls) != 0 {
		t.Errorf("b, run before, verified again: %v", p.calls)
	}
	cfgs["b"] = file("/var/lib/kubelet/config.json", "changed")
	p.ok = ""
	if err := back(cfgs); err == nil || len(p.calls) != 1 {
		t.Errorf("b with another spec: err %v, verified %v; want refused after a check", err, p.calls)
	}
}
