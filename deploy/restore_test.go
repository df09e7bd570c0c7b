package deploy

import (
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// managedBy is the label distributed snapshotting filters contents on
// (external-snapshotter utils.VolumeSnapshotContentManagedByLabel).
const managedBy = "snapshot.storage.kubernetes.io/managed-by"

// TestImportedBackups checks each pre-provisioned VolumeSnapshotContent
// (a backup imported by its handle): the handle's shape and target, Retain
// so deleting objects never deletes the backup, the managed-by label
// without which no node's csi-snapshotter sees it, and a VolumeSnapshot
// that binds back to it.
func TestImportedBackups(t *testing.T) {
	name, targets := servedDriverName(t), declaredTargets(t)
	contents, from := objectsOf[snapv1.VolumeSnapshotContent](t, false)
	snaps, _ := objectsOf[snapv1.VolumeSnapshot](t, false)
	classes, _ := objectsOf[snapv1.VolumeSnapshotClass](t, false)
	for i, c := range contents {
		m := from[i]
		if c.Spec.Driver != name {
			t.Errorf("%s: driver %q, chainvol-csi serves %q", m, c.Spec.Driver, name)
		}
		h := c.Spec.Source.SnapshotHandle
		if h == nil {
			continue // dynamically provisioned: the snapshotter fills it in
		}
		mm := backupHandle.FindStringSubmatch(*h)
		if mm == nil {
			t.Errorf("%s: snapshotHandle %q is not backup:TARGET:NAMESPACE/PVC@ID (ID: YYYYMMDDTHHMMSSZ-HEX8)", m, *h)
		} else if !targets[mm[1]] {
			t.Errorf("%s: handle target %q is not a -backup-target under deploy/", m, mm[1])
		}
		if c.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentRetain {
			t.Errorf("%s: an imported backup must be Retain, is %s", m, c.Spec.DeletionPolicy)
		}
		if c.Labels[managedBy] == "" {
			t.Errorf("%s: without label %s no node-deployed csi-snapshotter will process it", m, managedBy)
		}
		if cn := c.Spec.VolumeSnapshotClassName; cn != nil && !hasClass(classes, *cn) {
			t.Errorf("%s: VolumeSnapshotClass %q is not under deploy/", m, *cn)
		}
		ref := c.Spec.VolumeSnapshotRef
		bound := false
		for _, s := range snaps {
			if s.Namespace == ref.Namespace && s.Name == ref.Name {
				vc := s.Spec.Source.VolumeSnapshotContentName
				bound = vc != nil && *vc == c.Name
			}
		}
		if !bound {
			t.Errorf("%s: no VolumeSnapshot %s/%s with source.volumeSnapshotContentName %q", m, ref.Namespace, ref.Name, c.Name)
		}
	}
}

// TestExampleClaims checks example claims and snapshots name classes and
// data sources that exist under deploy/.
func TestExampleClaims(t *testing.T) {
	scs, _ := objectsOf[storagev1.StorageClass](t, false)
	snaps, _ := objectsOf[snapv1.VolumeSnapshot](t, false)
	classes, _ := objectsOf[snapv1.VolumeSnapshotClass](t, false)
	pvcs, from := objectsOf[corev1.PersistentVolumeClaim](t, false)
	for i, p := range pvcs {
		m := from[i]
		class, found := "", false
		if p.Spec.StorageClassName != nil {
			class = *p.Spec.StorageClassName
		}
		for _, sc := range scs {
			found = found || sc.Name == class
		}
		if !found {
			t.Errorf("%s: storageClassName %q is not under deploy/", m, class)
		}
		if ds := p.Spec.DataSource; ds != nil {
			ok := ds.Kind == "VolumeSnapshot" && ds.APIGroup != nil && *ds.APIGroup == snapv1.GroupName
			if !ok || findSnapshot(snaps, p.Namespace, ds.Name) == nil {
				t.Errorf("%s: dataSource %+v is not a VolumeSnapshot under deploy/", m, ds)
			}
		}
	}
	for _, s := range snaps {
		if cn := s.Spec.VolumeSnapshotClassName; cn != nil && !hasClass(classes, *cn) {
			t.Errorf("VolumeSnapshot %s/%s: class %q is not under deploy/", s.Namespace, s.Name, *cn)
		}
	}
}

func hasClass(classes []*snapv1.VolumeSnapshotClass, name string) bool {
	for _, c := range classes {
		if c.Name == name {
			return true
		}
	}
	return false
}

func findSnapshot(snaps []*snapv1.VolumeSnapshot, namespace, name string) *snapv1.VolumeSnapshot {
	for _, s := range snaps {
		if s.Namespace == namespace && s.Name == name {
			return s
		}
	}
	return nil
}
