package disruption_test

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	opv1 "github.com/openshift/api/operator/v1"
	"go.uber.org/zap/zaptest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/disruption"
	"github.com/nodeconfd/nodeconfd/phases/plan"
	"github.com/nodeconfd/nodeconfd/test/testbed/controlplane"
)

type testLog struct{ t *testing.T }

func (l testLog) Write(b []byte) (int, error) {
	l.t.Helper()
	l.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// The policy source on a real kube-apiserver with the shipped CRD: the
// defaults while there is no object, the object's rules once there is, the
// last good rules while the object breaks the daemon's rules (a relative
// path, which the CRD lets through), the new ones once fixed.
func TestSourceOnAPIServer(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (the test bed's control plane)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err := controlplane.Start(ctx, controlplane.Options{Dir: t.TempDir(), Log: testLog{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cp.Stop() })
	api, err := kubeapi.NewAPI(cp.RestConfig())
	if err != nil {
		t.Fatal(err)
	}
	res, err := kubeapi.MachineConfigurations(api)
	if err != nil {
		t.Fatal(err)
	}
	s := &disruption.Source{Resource: res, Log: zaptest.NewLogger(t)}
	s.Start(ctx)
	for { // its first read (each call waits up to 5 s for it)
		p, err := s.Policy()
		if err == nil {
			if !reflect.DeepEqual(p, plan.DefaultPolicy()) {
				t.Fatal("no object: not the defaults")
			}
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no object: %v", err)
		}
	}

	rule := func(path string) opv1.NodeDisruptionPolicySpecFile {
		return opv1.NodeDisruptionPolicySpecFile{Path: path, Actions: []opv1.NodeDisruptionPolicySpecAction{{Type: opv1.NoneSpecAction}}}
	}
	mc := &opv1.MachineConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "cluster"}}
	mc.Spec.ManagementState = "Managed"
	// The typed object always sends sshkey; the CRD then wants its actions.
	mc.Spec.NodeDisruptionPolicy.SSHKey.Actions = []opv1.NodeDisruptionPolicySpecAction{{Type: opv1.NoneSpecAction}}
	mc.Spec.NodeDisruptionPolicy.Files = []opv1.NodeDisruptionPolicySpecFile{rule("/etc/good")}
	if mc, err = res.Create(ctx, mc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRule(ctx, t, s, "/etc/good/x", "spec.nodeDisruptionPolicy.files[0]")

	mc.Spec.NodeDisruptionPolicy.Files = []opv1.NodeDisruptionPolicySpecFile{rule("/etc/good"), rule("etc/relative")}
	if mc, err = res.Update(ctx, mc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the watch delivers the update
	if p, err := s.Policy(); err != nil {
		t.Errorf("a refused object with a good one before: %v", err)
	} else if r, _ := p.FileRuleFor("/etc/good/x"); r.Source != "spec.nodeDisruptionPolicy.files[0]" {
		t.Errorf("the last good policy is not in force: %+v", r)
	}
	// A source that never saw a good one refuses, naming the field.
	fresh := &disruption.Source{Resource: res, Log: zaptest.NewLogger(t)}
	fresh.Start(ctx)
	for {
		_, err := fresh.Policy()
		if err != nil && strings.Contains(err.Error(), "not read yet") && ctx.Err() == nil {
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "spec.nodeDisruptionPolicy.files[1].path") {
			t.Errorf("a refused object and no good one: %v", err)
		}
		break
	}

	mc.Spec.NodeDisruptionPolicy.Files = []opv1.NodeDisruptionPolicySpecFile{rule("/etc/fixed")}
	if _, err = res.Update(ctx, mc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRule(ctx, t, s, "/etc/fixed/x", "spec.nodeDisruptionPolicy.files[0]")
	waitRule(ctx, t, fresh, "/etc/fixed/x", "spec.nodeDisruptionPolicy.files[0]")
}

// waitRule waits until the source's policy decides file by the rule source.
func waitRule(ctx context.Context, t *testing.T, s *disruption.Source, file, source string) {
	t.Helper()
	for {
		p, err := s.Policy()
		if r, _ := p.FileRuleFor(file); err == nil && r.Source == source {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for the rule of %s: %v", file, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
