package deploy

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Formats from the chainvol-csi flags and class parameters (docs/deploy.md).
var (
	backupTargetArg = regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_.-]*)=(file:///\S+|s3://[^/?\s]+(/[^?\s]*)?(\?\S*)?)$`)
	targetName      = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	fromBackup      = regexp.MustCompile(`^(?:([A-Za-z0-9][A-Za-z0-9_.-]*):)?([^@:\s]+)@(latest|\d{8}T\d{6}Z(?:-[0-9a-f]{8}|-\d+)?)$`)
	backupHandle    = regexp.MustCompile(`^backup:([A-Za-z0-9][A-Za-z0-9_.-]*):([^/@\s]+)/([^/@\s]+)@(\d{8}T\d{6}Z(?:-[0-9a-f]{8}|-\d+)?)$`)
)

// Parameter keys chainvol understands, plus the reserved csi.storage.k8s.io
// keys the sidecars consume; anything else is a typo the driver would
// reject at CreateVolume / CreateSnapshot time, on a live cluster.
var (
	storageClassParams = set("fromBackup", "backupTarget", "csi.storage.k8s.io/fstype",
		"csi.storage.k8s.io/provisioner-secret-name", "csi.storage.k8s.io/provisioner-secret-namespace")
	snapshotClassParams = set("backup", "backupTarget", "keepLast", "keepHourly", "keepDaily", "keepWeekly", "keepMonthly", "keepYearly", "keepWithin",
		"csi.storage.k8s.io/snapshotter-secret-name", "csi.storage.k8s.io/snapshotter-secret-namespace",
		"csi.storage.k8s.io/snapshotter-list-secret-name", "csi.storage.k8s.io/snapshotter-list-secret-namespace")
)

func set(items ...string) map[string]bool {
	m := map[string]bool{}
	for _, s := range items {
		m[s] = true
	}
	return m
}

// servedDriverName is the CSI driver name chainvol-csi serves as deployed:
// its -driver-name argument, else the default its -h prints.
func servedDriverName(t *testing.T) string {
	t.Helper()
	ds, _ := nodeDaemonSet(t)
	return effective(container(&ds.Spec.Template.Spec, driverContainer), driverFlags(t), "driver-name")
}

// declaredTargets lists the backup target names that some chainvol-csi
// container under deploy/ (base or overlay) is started with.
func declaredTargets(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	dss, _ := objectsOf[appsv1.DaemonSet](t, true)
	for _, ds := range dss {
		if c := container(&ds.Spec.Template.Spec, driverContainer); c != nil {
			for _, v := range argValues(c.Args, "backup-target") {
				if m := backupTargetArg.FindStringSubmatch(v); m != nil {
					names[m[1]] = true
				}
			}
		}
	}
	return names
}

// TestCSIDriver checks the CSIDriver object names the served driver and
// declares what a node-local, attach-free driver needs.
func TestCSIDriver(t *testing.T) {
	name := servedDriverName(t)
	drivers, from := objectsOf[storagev1.CSIDriver](t, false)
	if len(drivers) != 1 {
		t.Fatalf("want one CSIDriver, have %d", len(drivers))
	}
	d, m := drivers[0], from[0]
	if d.Name != name {
		t.Errorf("%s: CSIDriver %q, chainvol-csi serves %q", m, d.Name, name)
	}
	s := d.Spec
	if s.AttachRequired == nil || *s.AttachRequired {
		t.Errorf("%s: attachRequired must be false", m)
	}
	if s.PodInfoOnMount == nil || !*s.PodInfoOnMount {
		t.Errorf("%s: podInfoOnMount must be true", m)
	}
	if s.StorageCapacity == nil || !*s.StorageCapacity {
		t.Errorf("%s: storageCapacity must be true (node-local pools)", m)
	}
	if s.FSGroupPolicy == nil || *s.FSGroupPolicy != storagev1.FileFSGroupPolicy {
		t.Errorf("%s: fsGroupPolicy must be File", m)
	}
	if len(s.VolumeLifecycleModes) != 1 || s.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent {
		t.Errorf("%s: volumeLifecycleModes must be [Persistent], is %v", m, s.VolumeLifecycleModes)
	}
}

// TestStorageClasses checks each class provisions with the served driver,
// binds late, and passes only parameters chainvol understands, with
// backup targets and secrets that exist.
func TestStorageClasses(t *testing.T) {
	name, targets := servedDriverName(t), declaredTargets(t)
	scs, from := objectsOf[storagev1.StorageClass](t, false)
	for i, sc := range scs {
		m := from[i]
		if sc.Provisioner != name {
			t.Errorf("%s: provisioner %q, chainvol-csi serves %q", m, sc.Provisioner, name)
		}
		if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
			t.Errorf("%s: volumeBindingMode must be WaitForFirstConsumer", m)
		}
		checkParams(t, m, sc.Parameters, storageClassParams)
		if fs, ok := sc.Parameters["csi.storage.k8s.io/fstype"]; ok && fs != "ext4" && fs != "xfs" {
			t.Errorf("%s: fstype %q; the image ships mkfs.ext4 and mkfs.xfs only", m, fs)
		}
		if fb, ok := sc.Parameters["fromBackup"]; ok {
			// A restore keeps the backup's filesystem; an fstype would
			// refuse every backup of another one (issue 17).
			if fs, ok := sc.Parameters["csi.storage.k8s.io/fstype"]; ok {
				t.Errorf("%s: a fromBackup class must not set csi.storage.k8s.io/fstype (%q): restoring a backup of another filesystem through it is refused", m, fs)
			}
			mm := fromBackup.FindStringSubmatch(fb)
			if mm == nil {
				t.Errorf("%s: fromBackup %q is not [TARGET:]CHAIN@(latest|YYYYMMDDTHHMMSSZ)", m, fb)
			} else if mm[1] != "" && !targets[mm[1]] {
				t.Errorf("%s: fromBackup target %q is not a -backup-target of any chainvol-csi under deploy/", m, mm[1])
			}
		}
		checkTargetParam(t, m, sc.Parameters, targets)
		checkSecretRef(t, m, sc.Parameters, "csi.storage.k8s.io/provisioner-secret")
	}
}

// TestVolumeSnapshotClasses is TestStorageClasses for snapshot classes.
func TestVolumeSnapshotClasses(t *testing.T) {
	name, targets := servedDriverName(t), declaredTargets(t)
	vscs, from := objectsOf[snapv1.VolumeSnapshotClass](t, false)
	modes := map[string]bool{}
	for i, c := range vscs {
		m := from[i]
		if c.Driver != name {
			t.Errorf("%s: driver %q, chainvol-csi serves %q", m, c.Driver, name)
		}
		checkParams(t, m, c.Parameters, snapshotClassParams)
		b := c.Parameters["backup"]
		if b != "true" && b != "false" {
			t.Errorf("%s: backup=%q, want \"true\" or \"false\"", m, b)
		}
		modes[b] = true
		// Velero's CSI mode picks the class of a driver labelled so; only
		// a backup class makes Velero's snapshots survive the node
		// (docs/deploy.md "With Velero"; issue 17). A class with a
		// retention policy is not Velero's: the driver would delete the
		// backups of Velero's snapshots behind its back (issue 30).
		velero := c.Labels["velero.io/csi-volumesnapshot-class"]
		if policy := hasRetention(c.Parameters); policy && velero == "true" {
			t.Errorf("%s: a class with a retention policy is labelled velero.io/csi-volumesnapshot-class; Velero expires its own backups", m)
		} else if !policy && (b == "true") != (velero == "true") {
			t.Errorf("%s: backup=%s but velero.io/csi-volumesnapshot-class=%q; label the backup class, and only it", m, b, velero)
		}
		checkTargetParam(t, m, c.Parameters, targets)
		checkSecretRef(t, m, c.Parameters, "csi.storage.k8s.io/snapshotter-secret")
		checkSecretRef(t, m, c.Parameters, "csi.storage.k8s.io/snapshotter-list-secret")
	}
	if !modes["true"] || !modes["false"] {
		t.Errorf("examples should show both a local and a backup VolumeSnapshotClass, have backup=%v", keys(modes))
	}
}

func checkParams(t *testing.T, m manifest, params map[string]string, allowed map[string]bool) {
	t.Helper()
	for k := range params {
		if !allowed[k] {
			t.Errorf("%s: unknown parameter %q", m, k)
		}
	}
}

func checkTargetParam(t *testing.T, m manifest, params map[string]string, targets map[string]bool) {
	t.Helper()
	if tg, ok := params["backupTarget"]; ok && (!targetName.MatchString(tg) || !targets[tg]) {
		t.Errorf("%s: backupTarget %q is not a -backup-target of any chainvol-csi under deploy/ (have %v)", m, tg, keys(targets))
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// hasRetention reports whether class parameters set a retention policy.
func hasRetention(params map[string]string) bool {
	for k := range params {
		if strings.HasPrefix(k, "keep") {
			return true
		}
	}
	return false
}
