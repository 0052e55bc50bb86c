package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// The ETAs on real parts: a pool of three workers (maxUnavailable 1) rolls
// out three changes that drain (the Reload kind) and two that reboot. While
// a node updates its MachineConfigNode's status.updateETA has an estimate
// after its start; once done, the finish and no estimate. While the pool
// rolls out its Updating message says "expected to finish by"; once
// updated, not. The predictions are measured against the real finishes
// and the errors logged (not asserted: they are figures, not a test of
// speed).
func TestRolloutETA(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	names := []string{"eta-a", "eta-b", "eta-c"}
	// A pool of its own (the worker pool is the other tests'), which goes
	// with its nodes and fragments at the end.
	const role = "node-role.kubernetes.io/eta"
	etaPool := &mcfgv1.MachineConfigPool{ObjectMeta: metav1.ObjectMeta{Name: etaPoolName}, Spec: mcfgv1.MachineConfigPoolSpec{
		NodeSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{role: ""}},
		MachineConfigSelector: &metav1.LabelSelector{MatchLabels: map[string]string{roleLabel: etaPoolName}},
	}}
	if _, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Create(ctx, etaPool, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cleanupWorkers(t, names, "70-eta", "71-eta-reboot")
		cleanupPool(t, etaPoolName, nil, "")
	})
	labelledWorkers(ctx, t, names, []string{"zone-a", "zone-a", "zone-b"}, map[string]string{role: ""})
	w := watchETA(ctx, t, names)
	controllers(ctx, t)
	rebootFile := func(v string) *mcfgv1.MachineConfig {
		// A file no rule of the nodes' policy names: the default, a reboot.
		mc := testbed.MachineConfig("71-eta-reboot", testbed.Ignition(map[string]string{"/etc/eta/x": v}))
		mc.Labels = map[string]string{roleLabel: etaPoolName}
		return mc
	}
	drainFile := func(v string) *mcfgv1.MachineConfig {
		mc := fragment("70-eta", map[string]string{"eta": v})
		mc.Labels = map[string]string{roleLabel: etaPoolName}
		return mc
	}
	steps := []struct {
		kind string
		mc   *mcfgv1.MachineConfig
	}{
		{"Reload", drainFile("1")},
		{"Reload", drainFile("2")},
		{"Reload", drainFile("3")},
		{"Reboot", rebootFile("1")},
		{"Reboot", rebootFile("2")},
		{"Reboot", rebootFile("3")},
	}
	prev := "" // the pool selects no MachineConfig yet: its nodes run the bed's base config

	var rollouts []string
	for _, s := range steps {
		apply(ctx, t, s.mc)
		p := waitPoolNamed(ctx, t, etaPoolName, "rollout of a "+s.kind+" change", updatedTo(prev))
		prev = p.Spec.Configuration.Name
		rollouts = append(rollouts, prev)
	}
	// The node's last status write (its finish) follows its Done state,
	// which the pool counts.
	w.waitFinished(ctx, t, prev)
	w.stop()
	w.check(t, rollouts)
	w.report(t, rollouts)
}

// etaPoolName is TestRolloutETA's own pool.
const etaPoolName = "eta"

// nodeUpdate is one update of a node as its MachineConfigNode showed it.
type nodeUpdate struct {
	node, config, kind string
	started, finished  time.Time
	// first is the first estimate seen, at seenAt, from basedOn samples.
	first, seenAt time.Time
	basedOn       int
	estimates     int
	// bad lists what the status said that it must not.
	bad []string
}

// poolRollout is one rollout as the pool's Updating message showed it.
type poolRollout struct {
	first, seenAt, finished time.Time
	estimates               []time.Time
	afterDone               string
}

type etaWatch struct {
	mu      sync.Mutex
	names   []string
	updates map[string]*nodeUpdate // node/started
	pools   map[string]*poolRollout
	done    chan struct{}
	cancel  func()
}

func watchETA(ctx context.Context, t *testing.T, names []string) *etaWatch {
	w := &etaWatch{names: names, updates: map[string]*nodeUpdate{}, pools: map[string]*poolRollout{},
		done: make(chan struct{})}
	sctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	go func() {
		defer close(w.done)
		for sctx.Err() == nil {
			w.once(sctx)
			select {
			case <-sctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(w.stop)
	return w
}

func (w *etaWatch) stop() {
	w.cancel()
	<-w.done
}

// mcnETA is what the watch reads of a MachineConfigNode: the typed client
// drops status.updateETA (not in openshift/api's types), so it is read as
// JSON.
type mcnETA struct {
	Status struct {
		ConfigVersion struct {
			Desired string `json:"desired"`
		} `json:"configVersion"`
		UpdateETA *struct {
			PostAction      string    `json:"postAction"`
			Started         time.Time `json:"started"`
			EstimatedFinish time.Time `json:"estimatedFinish"`
			Finished        time.Time `json:"finished"`
			BasedOn         int       `json:"basedOn"`
		} `json:"updateETA"`
	} `json:"status"`
}

// waitFinished waits until every node's update to config shows its finish.
func (w *etaWatch) waitFinished(ctx context.Context, t *testing.T, config string) {
	t.Helper()
	for {
		w.mu.Lock()
		n := 0
		for _, u := range w.updates {
			if u.config == config && !u.finished.IsZero() {
				n++
			}
		}
		w.mu.Unlock()
		if n == len(w.names) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d nodes' MachineConfigNodes show the finish of %s", n, len(w.names), config)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (w *etaWatch) once(ctx context.Context) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, n := range w.names {
		raw, err := bed.MCfg.MachineconfigurationV1().RESTClient().Get().Resource("machineconfignodes").Name(n).DoRaw(ctx)
		var m mcnETA
		if err != nil || json.Unmarshal(raw, &m) != nil || m.Status.UpdateETA == nil || m.Status.UpdateETA.Started.IsZero() {
			continue
		}
		e := m.Status.UpdateETA
		key := n + "/" + e.Started.Format(time.RFC3339)
		u := w.updates[key]
		if u == nil {
			u = &nodeUpdate{node: n, started: e.Started}
			w.updates[key] = u
		}
		if e.PostAction != "" {
			u.kind = e.PostAction
		}
		if m.Status.ConfigVersion.Desired != "" {
			u.config = m.Status.ConfigVersion.Desired
		}
		switch {
		case !e.Finished.IsZero():
			u.finished = e.Finished
			if !e.EstimatedFinish.IsZero() {
				u.bad = append(u.bad, "an estimate beside the finish")
			}
		case !e.EstimatedFinish.IsZero():
			u.estimates++
			if u.first.IsZero() {
				u.first, u.seenAt, u.basedOn = e.EstimatedFinish, now, e.BasedOn
			}
			if e.EstimatedFinish.Before(e.Started) {
				u.bad = append(u.bad, fmt.Sprintf("estimate %s before the start %s", e.EstimatedFinish, e.Started))
			}
		}
	}
	p, err := bed.MCfg.MachineconfigurationV1().MachineConfigPools().Get(ctx, etaPoolName, metav1.GetOptions{})
	if err != nil || p.Spec.Configuration.Name == "" {
		return
	}
	r := w.pools[p.Spec.Configuration.Name]
	if r == nil {
		r = &poolRollout{}
		w.pools[p.Spec.Configuration.Name] = r
	}
	est, ok := poolETA(updatingMessage(p))
	upd := condition(p, mcfgv1.MachineConfigPoolUpdated)
	switch {
	case upd != nil && upd.Status == corev1.ConditionTrue && p.Status.Configuration.Name == p.Spec.Configuration.Name:
		if ok {
			r.afterDone = updatingMessage(p)
		}
	case ok:
		if r.first.IsZero() {
			r.first, r.seenAt = est, now
		}
		if len(r.estimates) == 0 || !r.estimates[len(r.estimates)-1].Equal(est) {
			r.estimates = append(r.estimates, est)
		}
	}
}

// poolETA cuts the estimate out of the pool's Updating message.
func poolETA(msg string) (time.Time, bool) {
	_, rest, ok := strings.Cut(msg, "expected to finish by ")
	if !ok {
		return time.Time{}, false
	}
	at, _, _ := strings.Cut(rest, " ")
	t, err := time.Parse(time.RFC3339, at)
	return t, err == nil
}

// check fails t where the status was not sane: an update of a rollout
// never showed an estimate, or showed one beside its finish or before its
// start; a rollout never showed one, or still did once done.
func (w *etaWatch) check(t *testing.T, rollouts []string) {
	t.Helper()
	for _, c := range rollouts {
		estimated, finished := 0, 0
		for _, u := range w.updates {
			if u.config != c {
				continue
			}
			if !u.first.IsZero() {
				estimated++
			}
			if !u.finished.IsZero() {
				finished++
			}
			if len(u.bad) > 0 {
				t.Errorf("%s's update to %s: %s", u.node, c, strings.Join(u.bad, "; "))
			}
		}
		if finished != len(w.names) || estimated == 0 {
			t.Errorf("rollout of %s: %d updates finished, %d seen with an estimate; want %d finished, some estimated",
				c, finished, estimated, len(w.names))
		}
		r := w.pools[c]
		switch {
		case r == nil || len(r.estimates) == 0:
			t.Errorf("rollout of %s: the pool's Updating message never said when it would finish", c)
		case r.afterDone != "":
			t.Errorf("rollout of %s: once updated, the pool still says %q", c, r.afterDone)
		}
	}
}
