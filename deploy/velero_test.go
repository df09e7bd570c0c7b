package deploy

import (
	"maps"
	"path/filepath"
	"slices"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// veleroLabel is the label Velero's CSI mode picks a driver's
// VolumeSnapshotClass by; it needs exactly one per driver.
const veleroLabel = "velero.io/csi-volumesnapshot-class"

// kustomizeClasses builds dir with kustomize's own library (`kubectl apply
// -k dir` applies exactly this) and returns its VolumeSnapshotClasses by name.
func kustomizeClasses(t *testing.T, dir string) map[string]snapv1.VolumeSnapshotClass {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	out := map[string]snapv1.VolumeSnapshotClass{}
	for _, r := range m.Resources() {
		if r.GetKind() != "VolumeSnapshotClass" {
			continue
		}
		y, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		var c snapv1.VolumeSnapshotClass
		if err := yaml.UnmarshalStrict(y, &c); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		out[c.Name] = c
	}
	return out
}

// checkOneVeleroClass: a set of classes with any VolumeSnapshotClass has
// exactly one labelled for Velero, and it is a backup class (a local
// snapshot does not outlive the node Velero would restore to).
func checkOneVeleroClass(t *testing.T, set string, classes map[string]snapv1.VolumeSnapshotClass) {
	t.Helper()
	var labelled []string
	for _, name := range slices.Sorted(maps.Keys(classes)) {
		c := classes[name]
		if c.Labels[veleroLabel] == "true" {
			labelled = append(labelled, name)
			if c.Parameters["backup"] != "true" {
				t.Errorf("%s: Velero's class %s is not a backup class (backup=%q)", set, name, c.Parameters["backup"])
			}
		}
	}
	if len(classes) > 0 && len(labelled) != 1 {
		t.Errorf("%s: %d VolumeSnapshotClasses labelled %s (%v); Velero needs exactly one (docs/deploy.md \"With Velero\")",
			set, len(labelled), veleroLabel, labelled)
	}
}

// TestOneVeleroClassPerSet: every example set as `kubectl apply -k` applies
// it (deploy/base and each deploy/examples/*), and the documented sequence
// storageclasses then retention (as kubectl apply leaves the cluster: a
// later set's object replaces the earlier one of that name), holds exactly
// one Velero-labelled class when it holds any (issue 33: storageclasses and
// retention both labelled theirs, while docs/deploy.md said Velero needs
// exactly one).
func TestOneVeleroClassPerSet(t *testing.T) {
	dirs, err := filepath.Glob("examples/*/kustomization.yaml")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no example sets: %v", err)
	}
	dirs = append(dirs, "base/kustomization.yaml")
	withClasses := 0
	for _, k := range dirs {
		dir := filepath.Dir(k)
		classes := kustomizeClasses(t, dir)
		if len(classes) > 0 {
			withClasses++
		}
		checkOneVeleroClass(t, dir, classes)
	}
	if withClasses < 2 {
		t.Errorf("%d example sets have VolumeSnapshotClasses; want storageclasses and retention at least", withClasses)
	}
	cluster := kustomizeClasses(t, "examples/storageclasses")
	maps.Copy(cluster, kustomizeClasses(t, "examples/retention"))
	checkOneVeleroClass(t, "storageclasses then retention", cluster)
	if cluster["chainvol-backup-delete"].Labels[veleroLabel] != "true" {
		t.Error("after retention, Velero's class should be chainvol-backup-delete (its TTL then frees the backups)")
	}
}
