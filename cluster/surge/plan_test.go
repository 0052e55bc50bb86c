package surge

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestOptedIn(t *testing.T) {
	on, off := map[string]string{Annotation: "true"}, map[string]string{Annotation: "false"}
	for _, c := range []struct {
		name         string
		workload, ns map[string]string
		want         bool
	}{
		{"neither", nil, nil, false},
		{"workload", on, nil, true},
		{"namespace", nil, on, true},
		{"workload opts out of its namespace", off, on, false},
		{"workload opts in against its namespace", on, off, true},
		{"any other value is no", map[string]string{Annotation: "yes"}, on, false},
	} {
		if got := optedIn(c.workload, c.ns); got != c.want {
			t.Errorf("%s: optedIn = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSurgeRefusal(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	replicas := &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{}}}`)}
	template := &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:template":{}},"f:metadata":{"f:labels":{}}}`)}
	at := func(ago time.Duration) *metav1.Time { t := metav1.NewTime(now.Add(-ago)); return &t }
	dep := Workload{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", Replicas: 1}
	clones := Workload{APIVersion: "apps.kruise.io/v1alpha1", Resource: "clonesets", Kind: "CloneSet", Namespace: "shop",
		Name: "web", Replicas: 2}
	hpa := func(kind, name string) autoscalingv2.HorizontalPodAutoscaler {
		return autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "h"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{
				APIVersion: "apps/v1", Kind: kind, Name: name}}}
	}
	with := func(w Workload, m ...metav1.ManagedFieldsEntry) Workload { w.ManagedFields = m; return w }
	for _, c := range []struct {
		name string
		w    Workload
		hpas []autoscalingv2.HorizontalPodAutoscaler
		want string
	}{
		{"plain Deployment", dep, nil, ""},
		{"ordered StatefulSet", Workload{Kind: "StatefulSet", Namespace: "shop", Name: "db", Replicas: 1}, nil,
			"StatefulSet db has podManagementPolicy OrderedReady, not Parallel"},
		{"parallel StatefulSet", Workload{Kind: "StatefulSet", Namespace: "shop", Name: "db", Replicas: 1, Parallel: true}, nil, ""},
		{"no replicas", Workload{Kind: "Deployment", Namespace: "shop", Name: "web"}, nil, "Deployment shop/web has no replicas to add to"},
		{"autoscaled", dep, []autoscalingv2.HorizontalPodAutoscaler{hpa("Deployment", "other"), hpa("Deployment", "web")},
			"HorizontalPodAutoscaler h scales Deployment shop/web"},
		{"autoscaler of a namesake of another kind", dep, []autoscalingv2.HorizontalPodAutoscaler{hpa("StatefulSet", "web")}, ""},
		{"a custom kind", clones, nil, ""},
		{"a custom kind autoscaled", clones, []autoscalingv2.HorizontalPodAutoscaler{func() autoscalingv2.HorizontalPodAutoscaler {
			h := hpa("CloneSet", "web")
			h.Spec.ScaleTargetRef.APIVersion = "apps.kruise.io/v1alpha1"
			return h
		}()}, "HorizontalPodAutoscaler h scales CloneSet shop/web"},
		{"an autoscaler of the same name in another group", clones, []autoscalingv2.HorizontalPodAutoscaler{hpa("CloneSet", "web")}, ""},
		{"scaled a minute ago", with(dep, metav1.ManagedFieldsEntry{Manager: "keda", Operation: metav1.ManagedFieldsOperationUpdate,
			Subresource: "scale", FieldsV1: replicas, Time: at(time.Minute)}), nil, `"keda" scaled Deployment shop/web 1m0s ago`},
		{"scaled an hour ago", with(dep, metav1.ManagedFieldsEntry{Manager: "keda", Operation: metav1.ManagedFieldsOperationUpdate,
			Subresource: "scale", FieldsV1: replicas, Time: at(time.Hour)}), nil, ""},
		{"applied", with(dep, metav1.ManagedFieldsEntry{Manager: "argocd-controller", Operation: metav1.ManagedFieldsOperationApply,
			FieldsV1: replicas, Time: at(48 * time.Hour)}), nil, `"argocd-controller" sets the replicas of Deployment shop/web by server-side apply`},
		{"applied without the replicas", with(dep, metav1.ManagedFieldsEntry{Manager: "argocd-controller",
			Operation: metav1.ManagedFieldsOperationApply, FieldsV1: template, Time: at(time.Minute)}), nil, ""},
		{"created a minute ago", with(dep, metav1.ManagedFieldsEntry{Manager: "kubectl-create", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsV1: replicas, Time: at(time.Minute)}), nil, ""},
		{"its own surge", with(dep, metav1.ManagedFieldsEntry{Manager: FieldManager, Operation: metav1.ManagedFieldsOperationUpdate,
			Subresource: "scale", FieldsV1: replicas, Time: at(time.Second)}), nil, ""},
		{"unreadable fields", with(dep, metav1.ManagedFieldsEntry{Manager: "x", Operation: metav1.ManagedFieldsOperationApply,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":1}`)}}), nil, ""},
	} {
		if got := refusal(c.w, c.hpas, now); got != c.want {
			t.Errorf("%s: refusal %q, want %q", c.name, got, c.want)
		}
	}
}

func TestRecordOf(t *testing.T) {
	lease := func(ann map[string]string) coordinationv1.Lease {
		return coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "nodeconfd-surge-0", Annotations: ann}}
	}
	good := map[string]string{WorkloadAnnotation: "StatefulSet/shop/db", UIDAnnotation: "u1", FromAnnotation: "3", ToAnnotation: "4"}
	rec, err := RecordOf(lease(good))
	if err != nil || rec.Workload.String() != "StatefulSet shop/db" || rec.Workload.UID != "u1" || rec.From != 3 || rec.To != 4 ||
		rec.Lease != "nodeconfd-surge-0" {
		t.Errorf("RecordOf = %+v, %v", rec, err)
	}
	custom := map[string]string{WorkloadAnnotation: "CloneSet/shop/web", APIAnnotation: "apps.kruise.io/v1alpha1 clonesets",
		FromAnnotation: "2", ToAnnotation: "3"}
	if rec, err := RecordOf(lease(custom)); err != nil || !rec.Workload.Scaled() ||
		rec.Workload.Target().APIVersion != "apps.kruise.io/v1alpha1" || rec.Workload.Resource != "clonesets" {
		t.Errorf("RecordOf(a custom kind) = %+v, %v", rec, err)
	}
	for _, bad := range []map[string]string{
		{WorkloadAnnotation: "CloneSet/shop/web", FromAnnotation: "2", ToAnnotation: "3"},
		{WorkloadAnnotation: "Deployment/shop/web", APIAnnotation: "apps/v1", FromAnnotation: "2", ToAnnotation: "3"},
		nil,
		{WorkloadAnnotation: "Pod/shop/db", FromAnnotation: "3", ToAnnotation: "4"},
		{WorkloadAnnotation: "Deployment/shop", FromAnnotation: "3", ToAnnotation: "4"},
		{WorkloadAnnotation: "Deployment/shop/web", FromAnnotation: "three", ToAnnotation: "4"},
		{WorkloadAnnotation: "Deployment/shop/web", FromAnnotation: "3", ToAnnotation: "99999999999"},
		{WorkloadAnnotation: "Deployment/shop/web", FromAnnotation: "-1", ToAnnotation: "0"},
		{WorkloadAnnotation: "Deployment/shop/web", FromAnnotation: "1", ToAnnotation: "5"},
	} {
		if _, err := RecordOf(lease(bad)); err == nil {
			t.Errorf("RecordOf(%v) read a surge, want an error", bad)
		}
	}
}
