package fleet

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/test/testbed"
)

// historyLen is how many changes of each node the history keeps.
const historyLen = 12

// history keeps the last changes each Node went through, as a watch saw
// them (one watch, as admin): what the pool's rollout decides from
// (cordon, desired and current config, state). When the pool's status
// counts more nodes unavailable than maxUnavailable, the benchmark prints
// the named nodes' histories, so that the step that made a node
// unavailable again can be told.
type history struct {
	start time.Time
	mu    sync.Mutex
	seen  map[string][]nodeView
}

// nodeView is one Node version as the rollout reads it.
type nodeView struct {
	at                               time.Duration
	rv                               string
	unschedulable                    bool
	cordonedBy, desired, current, st string
}

func (v nodeView) String() string {
	cordon := "schedulable"
	if v.unschedulable {
		cordon = "cordoned(" + v.cordonedBy + ")"
	}
	return fmt.Sprintf("%s rv=%s %s desired=%s current=%s state=%s", v.at.Round(time.Millisecond), v.rv, cordon,
		v.desired, v.current, v.st)
}

func (v nodeView) same(o nodeView) bool {
	v.at, v.rv, o.at, o.rv = 0, "", 0, ""
	return v == o
}

func startHistory(ctx context.Context, bed *testbed.Bed) (*history, error) {
	h := &history{start: time.Now(), seen: map[string][]nodeView{}}
	lw := cache.NewListWatchFromClient(bed.Kube.CoreV1().RESTClient(), "nodes", "", fields.Everything())
	if err := follow(ctx, lw, &corev1.Node{}, h.saw); err != nil { // track.go
		return nil, err
	}
	return h, nil
}

func (h *history) saw(o any) {
	n, ok := o.(*corev1.Node)
	if !ok {
		return
	}
	a := n.Annotations
	v := nodeView{at: time.Since(h.start), rv: n.ResourceVersion, unschedulable: n.Spec.Unschedulable,
		cordonedBy: a[names.CordonedBy], desired: a[names.DesiredConfig], current: a[names.CurrentConfig],
		st: a[names.State]}
	h.mu.Lock()
	defer h.mu.Unlock()
	vs := h.seen[n.Name]
	if len(vs) > 0 && vs[len(vs)-1].same(v) {
		return
	}
	if len(vs) == historyLen {
		vs = vs[1:]
	}
	h.seen[n.Name] = append(vs, v)
}

var fleetNodeName = regexp.MustCompile(`fleet-\d{5}`)

// describe is the histories of the fleet nodes text names (at most 20).
func (h *history) describe(text string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	named := map[string]bool{}
	for _, name := range fleetNodeName.FindAllString(text, -1) {
		if named[name] || len(named) == 20 {
			continue
		}
		named[name] = true
		fmt.Fprintf(&b, "\n    %s:", name)
		for _, v := range h.seen[name] {
			fmt.Fprintf(&b, "\n      %s", v)
		}
	}
	return b.String()
}
