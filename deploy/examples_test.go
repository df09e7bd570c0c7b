package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	appsv1 "k8s.io/api/apps/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// storageClassesDir is the example classes docs/deploy.md applies after
// either deploy/base or deploy/examples/s3.
const storageClassesDir = "examples/storageclasses/"

// embeddedTarget is the name of the driver's embedded default target, the
// only one when chainvol-csi has no -backup-target (target.DefaultName).
const embeddedTarget = "default"

// TestClassesWorkWithBase: the example classes work on deploy/base alone
// (issue 20: its backup class needed the S3 overlay's target and Secret):
// they name no target but those the base driver has, reference no Secret,
// and there is a backup class and a restore class for the default target.
func TestClassesWorkWithBase(t *testing.T) {
	base, _ := nodeDaemonSet(t)
	targets := map[string]bool{}
	for _, v := range argValues(container(&base.Spec.Template.Spec, driverContainer).Args, "backup-target") {
		if m := backupTargetArg.FindStringSubmatch(v); m != nil {
			targets[m[1]] = true
		}
	}
	if len(targets) == 0 {
		targets[embeddedTarget] = true
	}
	check := func(m manifest, params map[string]string) {
		for k, v := range params {
			if strings.Contains(k, "secret") {
				t.Errorf("%s: %s=%s: deploy/base has no such Secret", m, k, v)
			}
		}
		if tg, ok := params["backupTarget"]; ok && !targets[tg] {
			t.Errorf("%s: backupTarget %q: deploy/base has only %v", m, tg, keys(targets))
		}
		if mm := fromBackup.FindStringSubmatch(params["fromBackup"]); mm != nil && mm[1] != "" && !targets[mm[1]] {
			t.Errorf("%s: fromBackup target %q: deploy/base has only %v", m, mm[1], keys(targets))
		}
	}
	backup, restore := false, false
	scs, from := objectsOf[storagev1.StorageClass](t, false)
	for i, sc := range scs {
		if strings.HasPrefix(from[i].Path, storageClassesDir) {
			check(from[i], sc.Parameters)
			restore = restore || sc.Parameters["fromBackup"] != ""
		}
	}
	vscs, vfrom := objectsOf[snapv1.VolumeSnapshotClass](t, false)
	for i, c := range vscs {
		if strings.HasPrefix(vfrom[i].Path, storageClassesDir) {
			check(vfrom[i], c.Parameters)
			backup = backup || c.Parameters["backup"] == "true"
		}
	}
	if !backup || !restore {
		t.Errorf("%s should hold a backup class and a restore class for the default target (backup %v, restore %v)", storageClassesDir, backup, restore)
	}
}

// TestOneCredentialPath: docs/deploy.md says to give a target's credentials
// one way, the driver's -backup-credentials-file or Secrets named by the
// classes; the examples must not wire both (issue 20).
func TestOneCredentialPath(t *testing.T) {
	file := false
	dss, _ := objectsOf[appsv1.DaemonSet](t, true)
	for _, ds := range dss {
		if c := container(&ds.Spec.Template.Spec, driverContainer); c != nil {
			file = file || len(argValues(c.Args, "backup-credentials-file")) > 0
		}
	}
	var refs []string
	scs, from := objectsOf[storagev1.StorageClass](t, false)
	for i, sc := range scs {
		for k := range sc.Parameters {
			if strings.HasSuffix(k, "-secret-name") {
				refs = append(refs, from[i].String())
			}
		}
	}
	vscs, vfrom := objectsOf[snapv1.VolumeSnapshotClass](t, false)
	for i, c := range vscs {
		for k := range c.Parameters {
			if strings.HasSuffix(k, "-secret-name") {
				refs = append(refs, vfrom[i].String())
			}
		}
	}
	if file && len(refs) > 0 {
		t.Errorf("a driver reads -backup-credentials-file and classes also pass Secrets (%v): pick one", refs)
	}
}

// TestDocPathsExist: every deploy/ path the operator docs tell a reader to
// apply or edit exists, so the walkthrough can be pasted as written.
func TestDocPathsExist(t *testing.T) {
	for _, doc := range []string{"../docs/deploy.md", "../docs/operator.md", "../README.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		// Not a URL's path (.../external-snapshotter/deploy/kubernetes).
		for _, m := range regexp.MustCompile(`(?:^|[^/\w])(deploy/[A-Za-z0-9_./-]*[A-Za-z0-9_])`).FindAllStringSubmatch(string(b), -1) {
			if _, err := os.Stat("../" + m[1]); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, m[1])
			}
		}
	}
}
