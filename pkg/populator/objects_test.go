package populator

import (
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// userClaim is a StatefulSet member naming a BackupSource.
func userClaim() *corev1.PersistentVolumeClaim {
	class, group, block := "chainvol", Group, corev1.PersistentVolumeBlock
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data-db-10", Namespace: "shop", UID: types.UID("u-1"),
			Annotations: map[string]string{AnnSelectedNode: "node-a"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("3Gi")}},
			StorageClassName: &class, VolumeMode: &block,
			DataSourceRef: &corev1.TypedObjectReference{APIGroup: &group, Kind: Kind, Name: "db"},
		},
	}
}

// TestPrimeObjects: the prime claim copies class, size, access modes,
// volume mode and node, restores from the prime snapshot, and points back
// to the user's claim; the content holds only the handle, is Retain (the
// backup is never deleted with it), carries the node's managed-by label
// and the claim's volume mode; all three carry the claim's UID label.
func TestPrimeObjects(t *testing.T) {
	c := userClaim()
	p := primeFor(c, "chainvol-system", "node-a")
	if p.Name != "prime-u-1" || p.Namespace != "chainvol-system" || p.Annotations[AnnPopulatedFrom] != "shop/data-db-10" || p.Annotations[AnnSelectedNode] != "node-a" {
		t.Fatalf("prime meta %+v", p.ObjectMeta)
	}
	if !equality.Semantic.DeepEqual(p.Spec.AccessModes, c.Spec.AccessModes) || !p.Spec.Resources.Requests.Storage().Equal(resource.MustParse("3Gi")) ||
		*p.Spec.StorageClassName != "chainvol" || *p.Spec.VolumeMode != corev1.PersistentVolumeBlock {
		t.Fatalf("prime spec %+v", p.Spec)
	}
	if ds := p.Spec.DataSource; ds == nil || ds.Kind != "VolumeSnapshot" || *ds.APIGroup != snapv1.GroupName || ds.Name != "prime-u-1" || p.Spec.DataSourceRef != nil {
		t.Fatalf("prime data source %+v / %+v", p.Spec.DataSource, p.Spec.DataSourceRef)
	}
	handle := "backup:default:shop/data-db-10@before:2026-11-29T10:15:00Z"
	vsc := contentFor(c, handle, "chainvol.csi.io", "chainvol-system", "node-a")
	if *vsc.Spec.Source.SnapshotHandle != handle || vsc.Spec.Source.VolumeHandle != nil || vsc.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentRetain ||
		vsc.Labels[labelManagedBy] != "node-a" || *vsc.Spec.SourceVolumeMode != corev1.PersistentVolumeBlock ||
		vsc.Spec.VolumeSnapshotRef.Namespace != "chainvol-system" || vsc.Spec.VolumeSnapshotRef.Name != "prime-u-1" {
		t.Fatalf("content %+v", vsc)
	}
	vs := snapshotFor(c, "chainvol-system")
	if *vs.Spec.Source.VolumeSnapshotContentName != vsc.Name || vs.Spec.Source.PersistentVolumeClaimName != nil {
		t.Fatalf("snapshot %+v", vs.Spec)
	}
	for _, o := range []client.Object{p, vsc, vs} {
		if o.GetLabels()[LabelFor] != "u-1" {
			t.Errorf("%T %s lacks %s", o, o.GetName(), LabelFor)
		}
	}
}

// TestRequests: a user claim maps to itself, a prime claim to its user's
// claim through populated-from (only in the populator's namespace), any
// other claim to nothing.
func TestRequests(t *testing.T) {
	r := &Reconciler{Config: Config{Namespace: "chainvol-system"}}
	c := userClaim()
	p := primeFor(c, "chainvol-system", "node-a")
	other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "shop"}}
	stray := p.DeepCopy()
	stray.Namespace = "shop"
	want := []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: "shop", Name: "data-db-10"}}}
	if got := r.claimRequests(t.Context(), c); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("user claim: %v", got)
	}
	if got := r.claimRequests(t.Context(), p); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("prime claim: %v", got)
	}
	if got := append(r.claimRequests(t.Context(), other), r.claimRequests(t.Context(), stray)...); len(got) != 0 {
		t.Errorf("unrelated claims: %v", got)
	}
}
