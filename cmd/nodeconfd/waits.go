package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	"github.com/nodeconfd/nodeconfd/daemon/kube"
	"github.com/nodeconfd/nodeconfd/daemon/waits"
	"github.com/nodeconfd/nodeconfd/phases/window"
)

// waitOptions are the flags of what may hold an update: maintenance
// windows, blocking pods, alerts (the pause is an annotation).
type waitOptions struct {
	alerts        *alertOptions
	windows       window.Windows
	allUpdates    bool
	configMap     string
	blocking      string
	blockingSel   labels.Selector
	windowsByFlag windowList
	forecastWait  bool
}

// windowList is a repeatable --maintenance-window flag.
type windowList struct{ into *window.Windows }

func (l windowList) String() string {
	if l.into == nil {
		return ""
	}
	var s []string
	for _, w := range *l.into {
		s = append(s, w.Text)
	}
	return strings.Join(s, "; ")
}

func (l windowList) Set(v string) error {
	ws, err := window.ParseList(v)
	if err != nil {
		return err
	}
	*l.into = append(*l.into, ws...)
	return nil
}

func addWaitFlags(fs *flag.FlagSet) *waitOptions {
	w := &waitOptions{}
	w.windowsByFlag = windowList{&w.windows}
	fs.Var(w.windowsByFlag, "maintenance-window", "a maintenance window, DAYS START-END ZONE (e.g. \"Mon-Fri 22:00-06:00 "+
		"Europe/Berlin\"); repeat for several: outside them, updates that drain or reboot wait (none: always open)")
	fs.BoolVar(&w.allUpdates, "maintenance-windows-all-updates", false, "hold rebootless updates to the maintenance windows too")
	fs.StringVar(&w.configMap, "maintenance-windows-configmap", "", "name of a ConfigMap in --namespace, {pool} standing "+
		"for the node's pool (e.g. nodeconfd-windows-{pool}), whose data.windows replaces --maintenance-window when it "+
		"exists (watched; grant its read in RBAC)")
	fs.StringVar(&w.blocking, "blocking-pod-selector", "", "label selector of pods that, while running on the node, "+
		"hold an update that drains or reboots it (e.g. app=backup)")
	fs.BoolVar(&w.forecastWait, "drain-forecast-wait", true, "before the cordon, wait uncordoned while a "+
		"PodDisruptionBudget at zero that no surge could lift would hold the drain (false: cordon, and let the drain wait "+
		"for it under --drain-timeout)")
	w.alerts = addAlertFlags(fs)
	return w
}

// check validates the flags once parsed.
func (w *waitOptions) check() error {
	if w.blocking != "" {
		sel, err := labels.Parse(w.blocking)
		if err != nil {
			return fmt.Errorf("--blocking-pod-selector %q: %w", w.blocking, err)
		}
		w.blockingSel = sel
	}
	return w.alerts.check()
}

// source builds the node's waits.
func (w *waitOptions) source(o options, api *kube.Client, objects *kube.Watch) (*waits.Source, error) {
	s := &waits.Source{
		// A node in no pool reads the ConfigMap of no pool ("{pool}"
		// empty, not found): the flag's windows then.
		Node: objects.Node, Pool: func(n *corev1.Node) string { p, _ := kube.Pool(objects.Pools(), n, o.pool); return p },
		Now:     time.Now,
		Windows: w.windows, AllUpdates: w.allUpdates,
		Namespace: o.namespace, ConfigMapName: w.configMap, Retry: api.Retry(),
		Pods: api.API.Pods(""), NodeName: o.nodeName, Blocking: w.blockingSel,
	}
	if w.configMap != "" {
		cms, err := kubeapi.ConfigMaps(api.API, o.namespace)
		if err != nil {
			return nil, err
		}
		s.ConfigMaps = cms
	}
	return s, nil
}
