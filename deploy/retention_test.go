package deploy

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	batchv1 "k8s.io/api/batch/v1"
	rbacv1 "k8s.io/api/rbac/v1"
)

// The scheduled-backup example is a CronJob: decode it strictly like the rest.
func init() { types["batch/v1/CronJob"] = func() any { return &batchv1.CronJob{} } }

// TestRetentionExamples: the retention class deletes backups with their
// snapshots; the scheduled-backup CronJob runs chainvolctl k8s snapshot
// with a class that exists under deploy/ and is Delete (else pruning a
// snapshot would keep its backup forever), under a service account whose
// Role grants what the command does, and with flags the command accepts.
func TestRetentionExamples(t *testing.T) {
	classes := map[string]*snapv1.VolumeSnapshotClass{}
	vscs, _ := objectsOf[snapv1.VolumeSnapshotClass](t, false)
	for _, c := range vscs {
		classes[c.Name] = c
	}
	if c := classes["chainvol-backup-delete"]; c == nil || c.DeletionPolicy != snapv1.VolumeSnapshotContentDelete || c.Parameters["backup"] != "true" {
		t.Fatalf("class chainvol-backup-delete: %+v, want a Delete backup class", c)
	}
	jobs, from := objectsOf[batchv1.CronJob](t, false)
	if len(jobs) == 0 {
		t.Fatal("no scheduled-backup CronJob under deploy/examples")
	}
	roles, _ := objectsOf[rbacv1.Role](t, false)
	bindings, _ := objectsOf[rbacv1.RoleBinding](t, false)
	for i, j := range jobs {
		pod := j.Spec.JobTemplate.Spec.Template.Spec
		cmd := pod.Containers[0].Command
		if len(cmd) < 3 || cmd[0] != "chainvolctl" || cmd[1] != "k8s" || cmd[2] != "snapshot" {
			t.Fatalf("%s: command %v, want chainvolctl k8s snapshot", from[i], cmd)
		}
		flags := map[string]string{}
		for _, a := range cmd[3:] {
			k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
			flags[k] = v
		}
		if c := classes[flags["class"]]; c == nil || c.DeletionPolicy != snapv1.VolumeSnapshotContentDelete {
			t.Errorf("%s: --class %q is not a Delete class under deploy/", from[i], flags["class"])
		}
		if !grants(roles, bindings, j.Namespace, pod.ServiceAccountName, "", "persistentvolumeclaims", "list") {
			t.Errorf("%s: service account %q cannot list claims", from[i], pod.ServiceAccountName)
		}
		for _, verb := range []string{"create", "list", "delete"} {
			if !grants(roles, bindings, j.Namespace, pod.ServiceAccountName, "snapshot.storage.k8s.io", "volumesnapshots", verb) {
				t.Errorf("%s: service account %q cannot %s volumesnapshots", from[i], pod.ServiceAccountName, verb)
			}
		}
		out, err := exec.Command("go", "run", "../cmd/chainvolctl", "k8s", "snapshot", "--help").CombinedOutput()
		if err != nil {
			t.Fatalf("chainvolctl k8s snapshot --help: %v\n%s", err, out)
		}
		for k := range flags {
			if !strings.Contains(string(out), "--"+k+" ") {
				t.Errorf("%s: flag --%s is not one of chainvolctl k8s snapshot's", from[i], k)
			}
		}
	}
}

// grants reports whether a RoleBinding in ns gives service account sa a
// Role rule with verb on group/resource.
func grants(roles []*rbacv1.Role, bindings []*rbacv1.RoleBinding, ns, sa, group, resource, verb string) bool {
	for _, b := range bindings {
		if b.Namespace != ns || b.RoleRef.Kind != "Role" || !slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool {
			return s.Kind == "ServiceAccount" && s.Name == sa && s.Namespace == ns
		}) {
			continue
		}
		for _, r := range roles {
			if r.Namespace != ns || r.Name != b.RoleRef.Name {
				continue
			}
			for _, rule := range r.Rules {
				if slices.Contains(rule.APIGroups, group) && slices.Contains(rule.Resources, resource) && slices.Contains(rule.Verbs, verb) {
					return true
				}
			}
		}
	}
	return false
}
