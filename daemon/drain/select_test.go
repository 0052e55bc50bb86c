package drain

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pod(name string, mod ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name, UID: types.UID("uid-" + name)}}
	for _, m := range mod {
		m(p)
	}
	return p
}

func ownedBy(apiVersion, kind string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind,
			Name: "owner", Controller: &yes})
	}
}

func phase(ph corev1.PodPhase) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func mirror(p *corev1.Pod) { p.Annotations = map[string]string{mirrorPodAnnotation: "hash"} }

func emptyDir(p *corev1.Pod) {
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
}

func notController(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "x"}}
}

func TestSelect(t *testing.T) {
	for _, tc := range []struct {
		name         string
		pods         []*corev1.Pod
		evictUnowned bool
		wantEvict    string // names, comma-separated
		wantSkipped  int
		wantUnowned  string // "" for no error
	}{
		{"replicaset, statefulset, job pods are evicted",
			[]*corev1.Pod{pod("web", ownedBy("apps/v1", "ReplicaSet")), pod("db", ownedBy("apps/v1", "StatefulSet")),
				pod("job", ownedBy("batch/v1", "Job"))}, false, "web,db,job", 0, ""},
		{"daemonset and mirror pods stay",
			[]*corev1.Pod{pod("agent", ownedBy("apps/v1", "DaemonSet")), pod("etcd", mirror), pod("web", ownedBy("apps/v1", "ReplicaSet"))},
			false, "web", 2, ""},
		{"a DaemonSet kind of another API group is not a DaemonSet",
			[]*corev1.Pod{pod("x", ownedBy("example.com/v1", "DaemonSet"))}, false, "x", 0, ""},
		{"emptyDir pods are evicted",
			[]*corev1.Pod{pod("cache", ownedBy("apps/v1", "ReplicaSet"), emptyDir)}, false, "cache", 0, ""},
		{"unowned pods fail the selection by default, named and sorted",
			[]*corev1.Pod{pod("web", ownedBy("apps/v1", "ReplicaSet")), pod("zed"), pod("bare"), pod("ref", notController)},
			false, "", 0, "apps/bare, apps/ref, apps/zed"},
		{"unowned pods are evicted when allowed",
			[]*corev1.Pod{pod("bare"), pod("web", ownedBy("apps/v1", "ReplicaSet"))}, true, "bare,web", 0, ""},
		{"finished unowned pods are evicted anyway",
			[]*corev1.Pod{pod("done", phase(corev1.PodSucceeded)), pod("failed", phase(corev1.PodFailed))}, false, "done,failed", 0, ""},
		{"an unowned mirror pod stays", []*corev1.Pod{pod("static", mirror)}, false, "", 1, ""},
		{"no pods", nil, false, "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := Select(tc.pods, tc.evictUnowned)
			var ue *UnownedError
			if tc.wantUnowned != "" {
				if !errors.As(err, &ue) || strings.Join(ue.Pods, ", ") != tc.wantUnowned {
					t.Fatalf("error %v, want unowned pods %s", err, tc.wantUnowned)
				}
				if !strings.Contains(err.Error(), "--evict-unowned-pods") || !strings.Contains(err.Error(), tc.wantUnowned) {
					t.Errorf("message %q does not name the pods and the flag", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range sel.Evict {
				names = append(names, p.Name)
			}
			if got := strings.Join(names, ","); got != tc.wantEvict {
				t.Errorf("evict %q, want %q", got, tc.wantEvict)
			}
			if sel.Skipped != tc.wantSkipped {
				t.Errorf("skipped %d, want %d", sel.Skipped, tc.wantSkipped)
			}
		})
	}
}
