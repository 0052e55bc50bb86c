package kured

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodeconfd/nodeconfd/test/testbed/images"
)

// kured's DaemonSet, where its lock is (--ds-namespace, --ds-name: its
// defaults), and the lock's annotation (--lock-annotation's default).
const (
	kuredNamespace = "kube-system"
	kuredName      = "kured"
	kuredLock      = "weave.works/kured-node-lock"
	// period is both tools' check period: kured's --period, nodeconfd's
	// --reboot-check-interval.
	period = "10s"
)

// kuredArgs are kured's flags here. Each not given is kured's default:
// one node at a time (--concurrency=1, said anyway), no reboot window
// (every day, 0:00 to 23:59:59), no drain or reboot delay, no lock TTL or
// release delay, the pods' own grace periods, no blocking pods or alerts.
// The reboot command is kured's default, which kured runs in the node's
// mount namespace (nsenter into PID 1's): systemd's reboot of the node,
// the reboot nodeconfd asks systemd for over D-Bus.
func kuredArgs() []string {
	return []string{
		"--reboot-sentinel=/sentinel/reboot-required", "--period=" + period, "--concurrency=1",
		"--reboot-command=/bin/systemctl reboot", "--ds-namespace=" + kuredNamespace, "--ds-name=" + kuredName,
	}
}

// installKured creates what kured's install manifests create, written
// here from its documented rights (kured-rbac.yaml: read and patch nodes,
// list, get and evict pods, read DaemonSets, update its own DaemonSet for
// the lock) and its DaemonSet's pod (privileged with the host's PID
// namespace, to nsenter into PID 1; the node's /var/run read-only as
// /sentinel; the node's name in KURED_NODE_ID), running image. The one
// addition: the node's /usr read-only as the pod's /usr (images.Kured).
func installKured(ctx context.Context, image string) error {
	rbac := bed.Kube.RbacV1()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: kuredName, Namespace: kuredNamespace}}
	if _, err := bed.Kube.CoreV1().ServiceAccounts(kuredNamespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating kured's ServiceAccount: %w", err)
	}
	subject := []rbacv1.Subject{{Kind: "ServiceAccount", Name: kuredName, Namespace: kuredNamespace}}
	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: kuredName}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "delete", "get"}},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
	}}
	if _, err := rbac.ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating kured's ClusterRole: %w", err)
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: kuredName}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: kuredName}}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating kured's ClusterRoleBinding: %w", err)
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: kuredName, Namespace: kuredNamespace}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, ResourceNames: []string{kuredName}, Verbs: []string{"update"}},
	}}
	if _, err := rbac.Roles(kuredNamespace).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating kured's Role: %w", err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: kuredName, Namespace: kuredNamespace}, Subjects: subject,
		RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: kuredName}}
	if _, err := rbac.RoleBindings(kuredNamespace).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating kured's RoleBinding: %w", err)
	}
	if _, err := bed.Kube.AppsV1().DaemonSets(kuredNamespace).Create(ctx, kuredDaemonSet(image), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating kured's DaemonSet: %w", err)
	}
	return nil
}

func kuredDaemonSet(image string) *appsv1.DaemonSet {
	labels := map[string]string{"name": kuredName}
	yes := true
	dir := corev1.HostPathDirectory
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: kuredName, Namespace: kuredNamespace},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: kuredName,
					HostPID:            true,
					Tolerations: []corev1.Toleration{
						{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
					},
					Volumes: []corev1.Volume{
						{Name: "sentinel", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/run", Type: &dir}}},
						{Name: "usr", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/usr", Type: &dir}}},
					},
					Containers: []corev1.Container{{
						Name: kuredName, Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
						Command:         append([]string{images.KuredEntrypoint}, kuredArgs()...),
						SecurityContext: &corev1.SecurityContext{Privileged: &yes, ReadOnlyRootFilesystem: &yes},
						Ports:           []corev1.ContainerPort{{Name: "metrics", ContainerPort: 8080}},
						Env: []corev1.EnvVar{{Name: "KURED_NODE_ID", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "sentinel", MountPath: "/sentinel", ReadOnly: true},
							{Name: "usr", MountPath: "/usr", ReadOnly: true},
						},
					}},
				},
			},
		},
	}
}

// workloadNamespace holds the workload both tools drain.
const workloadNamespace = "bench-kured"

// workload is a Deployment of the bed's idle image, replicas pods spread
// over the nodes, which each drain evicts and the scheduler puts back on
// the others: the same for both tools.
func workload(image string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "idle"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "idle", Namespace: workloadNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.ScheduleAnyway,
						LabelSelector: &metav1.LabelSelector{MatchLabels: labels},
					}},
					Containers: []corev1.Container{{Name: "idle", Image: image}},
				},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &intstr.IntOrString{IntVal: 1}}},
		},
	}
}
