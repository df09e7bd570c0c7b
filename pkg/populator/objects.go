package populator

import (
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// labels are the labels of every object made for claim c.
func labels(c *corev1.PersistentVolumeClaim) map[string]string {
	return map[string]string{LabelFor: string(c.UID), "app.kubernetes.io/managed-by": "chainvol-populator"}
}

// contentFor is the pre-provisioned VolumeSnapshotContent holding only
// the handle (as chainvolctl k8s import writes them), bound to the prime
// snapshot in namespace ns, routed to node's csi-snapshotter; Retain, so
// that deleting it never deletes the backup.
func contentFor(c *corev1.PersistentVolumeClaim, handle, driver, ns, node string) *snapv1.VolumeSnapshotContent {
	l := labels(c)
	l[labelManagedBy] = node
	vsc := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: contentName(c.UID), Labels: l},
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{APIVersion: snapv1.SchemeGroupVersion.String(), Kind: "VolumeSnapshot", Namespace: ns, Name: primeName(c.UID)},
			DeletionPolicy:    snapv1.VolumeSnapshotContentRetain,
			Driver:            driver,
			Source:            snapv1.VolumeSnapshotContentSource{SnapshotHandle: &handle},
			SourceVolumeMode:  c.Spec.VolumeMode,
		},
	}
	return vsc
}

// snapshotFor is the prime VolumeSnapshot bound to contentFor's content.
func snapshotFor(c *corev1.PersistentVolumeClaim, ns string) *snapv1.VolumeSnapshot {
	name := contentName(c.UID)
	return &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: primeName(c.UID), Namespace: ns, Labels: labels(c)},
		Spec:       snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: &name}},
	}
}

// primeFor is the prime claim: the user claim's class, size, access
// modes and volume mode, the node the volume is made on, and the prime
// snapshot as its data source, so that the external-provisioner calls the
// driver's CreateVolume restore as for any snapshot source.
func primeFor(c *corev1.PersistentVolumeClaim, ns, node string) *corev1.PersistentVolumeClaim {
	group := snapv1.SchemeGroupVersion.Group
	p := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: primeName(c.UID), Namespace: ns, Labels: labels(c),
			Annotations: map[string]string{AnnPopulatedFrom: forClaim(c), AnnSelectedNode: node},
		},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      c.Spec.AccessModes,
			Resources:        corev1.VolumeResourceRequirements{Requests: c.Spec.Resources.Requests, Limits: c.Spec.Resources.Limits},
			StorageClassName: c.Spec.StorageClassName,
			VolumeMode:       c.Spec.VolumeMode,
			DataSource:       &corev1.TypedLocalObjectReference{APIGroup: &group, Kind: "VolumeSnapshot", Name: primeName(c.UID)},
		},
	}
	return p
}
