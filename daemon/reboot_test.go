package daemon

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi/kubetest"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/names"
)

// The check command asks for a reboot when it exits 0, not when it exits
// otherwise; one that cannot run is logged.
func TestRebootCheckCommand(t *testing.T) {
	run := func(ctx context.Context, argv []string) error {
		return exec.CommandContext(ctx, argv[0], argv[1:]...).Run()
	}
	core, logs := observer.New(zap.WarnLevel)
	now := time.Date(2026, 12, 4, 16, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		argv []string
		want string
		warn bool
	}{
		{[]string{"true"}, "command true exited 0 at 2026-12-04T16:00:00Z", false},
		{[]string{"false"}, "", false},
		{[]string{"/nonexistent/needs-reboot"}, "", true},
	} {
		d := &Daemon{RebootCommand: tc.argv, RunCommand: run, Now: func() time.Time { return now }}
		before := logs.Len()
		if got := d.commandRequest(context.Background(), zap.New(core)); got != tc.want {
			t.Errorf("%v: request %q, want %q", tc.argv, got, tc.want)
		}
		if warned := logs.Len() > before; warned != tc.warn {
			t.Errorf("%v: warned %v, want %v", tc.argv, warned, tc.warn)
		}
	}
	if d := (&Daemon{}); d.commandRequest(context.Background(), zap.NewNop()) != "" || d.idleDelay() != 0 {
		t.Error("no command, no sentinel: a request, or a periodic check")
	}
	d := &Daemon{RebootCommand: strings.Fields("true")}
	if got := d.idleDelay(); got != DefaultRebootCheckInterval {
		t.Errorf("idle delay with a command %s", got)
	}
}

type sentinels struct{ there bool }

func (s sentinels) Sentinel(string) (time.Time, bool, error) { return time.Unix(0, 0), s.there, nil }
func (s sentinels) RemoveSentinel(string, time.Time) error   { return nil }

// A granted request of the daemon's own whose sentinel is gone (someone
// else rebooted the node) is withdrawn, not answered with a second
// reboot; an administrator's request is answered.
func TestGrantedReboot(t *testing.T) {
	const own = "sentinel /run/reboot-required written 2026-12-04T10:00:00Z"
	for _, tc := range []struct {
		why      string
		there    bool
		reboots  bool
		withdraw bool
	}{
		{own, true, true, false},
		{own, false, false, true},
		{"alice: firmware", false, true, false},
	} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{
			names.RebootRequested: tc.why, names.RebootGranted: tc.why}}}
		k := fake.NewSimpleClientset(node.DeepCopy())
		d := &Daemon{API: &kube.Client{API: kubetest.API(k, nil), NodeName: "n1"}, RebootSentinel: "/run/reboot-required",
			Sentinels: sentinels{tc.there}, Log: zap.NewNop(), node: node}
		rec := d.grantedReboot(context.Background(), "rendered-a")
		if (rec != nil) != tc.reboots || rec != nil && (rec.RebootRequest != tc.why || rec.Current != "rendered-a" || rec.Desired != "rendered-a") {
			t.Errorf("%q, sentinel there %v: record %+v, want a reboot %v", tc.why, tc.there, rec, tc.reboots)
		}
		n, err := k.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, still := n.Annotations[names.RebootRequested]; still == tc.withdraw {
			t.Errorf("%q, sentinel there %v: request still there %v, want withdrawn %v", tc.why, tc.there, still, tc.withdraw)
		}
	}
}
