package waits

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/names"
	"github.com/nodeconfd/nodeconfd/phases"
	"github.com/nodeconfd/nodeconfd/phases/window"
)

// ConfigMap keys of the maintenance windows.
const (
	// KeyWindows holds the windows, one a line (window.ParseList).
	KeyWindows = "windows"
	// KeyAllUpdates, "true", holds rebootless updates to the windows too.
	KeyAllUpdates = "allUpdates"
)

// firstReadWait bounds the wait for the ConfigMap's first list.
const firstReadWait = 5 * time.Second

// Source is the node's phases.Waits.
type Source struct {
	// Node is the node as last seen by the daemon's watch (no request).
	Node func() (*corev1.Node, bool)
	// Pool is the node's pool, for the ConfigMap's name.
	Pool func(node *corev1.Node) string
	Now  func() time.Time

	// Windows are the flag's windows; AllUpdates the flag's choice for
	// rebootless updates. A ConfigMap, when it exists, replaces both.
	Windows    window.Windows
	AllUpdates bool
	// ConfigMaps and ConfigMapName (with {pool}) name the pool's ConfigMap
	// of windows; nil or "" for none.
	ConfigMaps    kubeapi.Resource[*corev1.ConfigMap, *corev1.ConfigMapList]
	Namespace     string
	ConfigMapName string
	// Retry is how the ConfigMap's watch tries again after a failure
	// (kube.Client.Retry; the zero Retry: within kube.MinReconnectJitter).
	Retry kube.Retry

	// Pods lists the node's pods; Blocking selects those that block a
	// disruptive update (nil: none do).
	Pods     kubeapi.Resource[*corev1.Pod, *corev1.PodList]
	NodeName string
	Blocking labels.Selector

	// Alerts, when set, holds a disruptive update while alerts fire.
	Alerts *AlertGate
	// Drain, when set, holds a disruptive update while its drain could not
	// finish (drain.Drainer.WouldBlock): the reason it says, "" for none.
	Drain interface {
		WouldBlock(ctx context.Context) (string, error)
	}

	mu          sync.Mutex
	ctx         context.Context
	pausedSince time.Time
	pausedText  string
	cm          *configMapWatch
}

type configMapWatch struct {
	name    string
	inf     cache.SharedIndexInformer
	stop    context.CancelFunc
	lastErr error
}

// Start gives the source its lifetime: the ConfigMap watch runs until ctx ends.
func (s *Source) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctx = ctx
}

// Paused reports whether the Node carries the pause annotation, since when
// this daemon first saw it with that value.
func (s *Source) Paused() (phases.Hold, bool) {
	n, ok := s.Node()
	if !ok {
		return phases.Hold{}, false
	}
	v, paused := n.Annotations[names.PauseAnnotation]
	s.mu.Lock()
	defer s.mu.Unlock()
	if !paused {
		s.pausedSince, s.pausedText = time.Time{}, ""
		return phases.Hold{}, false
	}
	if s.pausedSince.IsZero() || s.pausedText != v {
		s.pausedSince, s.pausedText = s.Now(), v
	}
	return pauseHold(n.Annotations, s.pausedSince)
}

// Check says what holds the update now: the pause, then the windows, then
// for a disruptive update the blocking pods, the drain's forecast and the
// alerts (asked last: a question to a server outside the cluster).
func (s *Source) Check(ctx context.Context, disruptive bool) (phases.Hold, error) {
	if h, ok := s.Paused(); ok {
		return h, nil
	}
	if h, ok := windowHold(s.windows(), disruptive, s.Now()); ok {
		return h, nil
	}
	if !disruptive {
		return phases.Hold{}, nil
	}
	if h, err := s.podsHold(ctx); h.Kind != "" || err != nil {
		return h, err
	}
	if s.Drain != nil {
		why, err := s.Drain.WouldBlock(ctx)
		if why != "" || err != nil {
			return phases.Hold{Kind: phases.HoldDrainBlocked, Message: why}, err
		}
	}
	if s.Alerts != nil {
		h, _ := s.Alerts.hold(ctx)
		return h, nil
	}
	return phases.Hold{}, nil
}

// maxBlockingPods bounds the pods one check reads (a page at a time): far
// above what a kubelet runs.
const maxBlockingPods = 5000

// podsHold is the hold of the blocking pods on the node, if any.
func (s *Source) podsHold(ctx context.Context) (phases.Hold, error) {
	if s.Blocking == nil || s.Blocking.Empty() || s.Pods == nil {
		return phases.Hold{}, nil
	}
	var pods []corev1.Pod
	_, err := kubeapi.Pages(ctx, s.Pods.List, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("spec.nodeName", s.NodeName).String(),
		LabelSelector: s.Blocking.String(),
	}, "pods on node "+s.NodeName, maxBlockingPods, func(l *corev1.PodList) error {
		pods = append(pods, l.Items...)
		return nil
	})
	if err != nil {
		return phases.Hold{}, fmt.Errorf("listing the pods of node %s that block a disruption (%s): %w", s.NodeName, s.Blocking, err)
	}
	h, _ := podsHold(pods, s.Blocking.String())
	return h, nil
}

// windows are the windows in force: the pool's ConfigMap when it exists,
// else the flag's.
func (s *Source) windows() Windows {
	flag := Windows{List: s.Windows, Source: "--maintenance-window", AllUpdates: s.AllUpdates}
	if s.ConfigMaps == nil || s.ConfigMapName == "" {
		return flag
	}
	n, ok := s.Node()
	if !ok {
		return flag
	}
	name := strings.ReplaceAll(s.ConfigMapName, "{pool}", s.Pool(n))
	w := s.watch(name)
	what := fmt.Sprintf("ConfigMap %s/%s", s.Namespace, name)
	if !w.inf.HasSynced() {
		// Its first list, when just started.
		syncCtx, cancel := context.WithTimeout(context.Background(), firstReadWait)
		cache.WaitForCacheSync(syncCtx.Done(), w.inf.HasSynced)
		cancel()
	}
	if !w.inf.HasSynced() {
		err := fmt.Errorf("%s not read yet", what)
		if e := s.watchErr(w); e != nil {
			err = fmt.Errorf("cannot read %s: %w", what, e)
		}
		return Windows{Source: what, AllUpdates: flag.AllUpdates, Err: err}
	}
	obj, exists, _ := w.inf.GetStore().GetByKey(s.Namespace + "/" + name)
	if !exists {
		return flag
	}
	return fromConfigMap(obj.(*corev1.ConfigMap), what)
}

// fromConfigMap reads the windows of a ConfigMap; a bad entry is an Err
// naming the ConfigMap and the key.
func fromConfigMap(cm *corev1.ConfigMap, what string) Windows {
	w := Windows{Source: what}
	list, err := window.ParseList(cm.Data[KeyWindows])
	if err != nil {
		w.Err = fmt.Errorf("%s: data.%s: %w", what, KeyWindows, err)
		return w
	}
	w.List = list
	switch v := cm.Data[KeyAllUpdates]; v {
	case "", "false":
	case "true":
		w.AllUpdates = true
	default:
		w.Err = fmt.Errorf("%s: data.%s: %q, want true or false", what, KeyAllUpdates, v)
	}
	return w
}

// watch returns the informer of ConfigMap name, started on first use (and
// again when the node's pool, so the name, changed).
func (s *Source) watch(name string) *configMapWatch {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cm != nil && s.cm.name == name {
		return s.cm
	}
	if s.cm != nil {
		s.cm.stop()
	}
	base := s.ctx
	if base == nil {
		base = context.Background()
	}
	ctx, stop := context.WithCancel(base)
	w := &configMapWatch{name: name, inf: kube.NewConfigMapWatch(s.ConfigMaps, name, s.Retry), stop: stop}
	_ = w.inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		s.mu.Lock()
		w.lastErr = err
		s.mu.Unlock()
	})
	go w.inf.RunWithContext(ctx)
	s.cm = w
	return w
}

func (s *Source) watchErr(w *configMapWatch) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return w.lastErr
}
