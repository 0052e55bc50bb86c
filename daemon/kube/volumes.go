package kube

import (
	"context"
	"fmt"

	"github.com/nodeconfd/nodeconfd/cluster/kubeapi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
)

// maxVolumeAttachments bounds the list of VolumeAttachments, one per
// volume attached anywhere in the cluster (they cannot be listed by node).
const maxVolumeAttachments = 50000

// MaxNodePods bounds the pods one list of a node's reads: far above what a
// kubelet runs (110 by default), far below what would exhaust the daemon's
// memory.
const MaxNodePods = 5000

// NodePodsSelector is the field selector of the pods bound to node.
func NodePodsSelector(node string) string {
	return fields.OneTermEqualSelector("spec.nodeName", node).String()
}

// AttachedVolumes lists, by name, the VolumeAttachments of this node that
// a reboot waits to see gone (phases.VolumeWait): those whose volume no
// pod left on the node uses. After a drain they are the evicted pods'
// volumes, which the attach-detach controller is detaching; a reboot
// before it has would leave them attached to a node that is gone, and
// their pods elsewhere fail with Multi-Attach errors until the kubelet's
// force-detach, 6 minutes later.
func (c *Client) AttachedVolumes(ctx context.Context) ([]string, error) {
	var mine []storagev1.VolumeAttachment
	_, err := kubeapi.Pages(ctx, c.API.VolumeAttachments().List, metav1.ListOptions{}, "VolumeAttachments", maxVolumeAttachments,
		func(l *storagev1.VolumeAttachmentList) error {
			for _, va := range l.Items {
				if va.Spec.NodeName == c.NodeName {
					mine = append(mine, va)
				}
			}
			return nil
		})
	if err != nil || len(mine) == 0 {
		return nil, err
	}
	inUse, err := c.claimsOnNode(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, va := range mine {
		if used, err := c.usedOnNode(ctx, va, inUse); err != nil {
			return nil, err
		} else if used {
			continue
		}
		out = append(out, describeAttachment(va))
	}
	return out, nil
}

// claimsOnNode are the PersistentVolumeClaims ("namespace/name") of the
// pods still running on the node.
func (c *Client) claimsOnNode(ctx context.Context) (map[string]bool, error) {
	inUse := map[string]bool{}
	opts := metav1.ListOptions{FieldSelector: NodePodsSelector(c.NodeName)}
	_, err := kubeapi.Pages(ctx, c.API.Pods("").List, opts, "the node's pods", MaxNodePods, func(l *corev1.PodList) error {
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim != nil {
					inUse[p.Namespace+"/"+v.PersistentVolumeClaim.ClaimName] = true
				}
			}
		}
		return nil
	})
	return inUse, err
}

// usedOnNode reports whether the attachment's volume is bound to a claim a
// pod left on the node uses.
func (c *Client) usedOnNode(ctx context.Context, va storagev1.VolumeAttachment, inUse map[string]bool) (bool, error) {
	pvName := va.Spec.Source.PersistentVolumeName
	if pvName == nil || len(inUse) == 0 {
		return false, nil
	}
	pv, err := c.API.PersistentVolumes().Get(ctx, *pvName, metav1.GetOptions{})
	if err != nil {
		return false, fmt.Errorf("reading PersistentVolume %s of VolumeAttachment %s: %w", *pvName, va.Name, err)
	}
	ref := pv.Spec.ClaimRef
	return ref != nil && inUse[ref.Namespace+"/"+ref.Name], nil
}

// describeAttachment names an attachment and its volume.
func describeAttachment(va storagev1.VolumeAttachment) string {
	if pv := va.Spec.Source.PersistentVolumeName; pv != nil {
		return fmt.Sprintf("VolumeAttachment %s (PersistentVolume %s)", va.Name, *pv)
	}
	return "VolumeAttachment " + va.Name
}
