package deploy

import (
	"slices"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// access is one permission a sidecar needs: verbs on group/resource.
// Namespaced access may come from a Role in the plugin's namespace.
type access struct {
	group, resource string
	verbs           []string
	namespaced      bool
}

var (
	read   = []string{"get", "list", "watch"}
	events = access{"", "events", []string{"list", "watch", "create", "update", "patch"}, true}
)

// needs lists, per sidecar image, what its controller does to the API
// (from each project's deploy/kubernetes/rbac*.yaml and this deployment's
// flags: secrets, snapshots as data sources, capacity owned by the pod).
var needs = map[string][]access{
	"csi-provisioner": {
		{"", "persistentvolumes", []string{"get", "list", "watch", "create", "patch", "delete"}, false},
		{"", "persistentvolumeclaims", []string{"get", "list", "watch", "update"}, false},
		{"", "nodes", read, false},
		{"", "secrets", []string{"get"}, true}, // only in the plugin's namespace (issue 17)
		{"storage.k8s.io", "storageclasses", read, false},
		{"storage.k8s.io", "csinodes", read, false},
		{"storage.k8s.io", "volumeattributesclasses", read, false},
		{"snapshot.storage.k8s.io", "volumesnapshots", read, false},
		{"snapshot.storage.k8s.io", "volumesnapshotcontents", []string{"get", "list"}, false},
		{"storage.k8s.io", "csistoragecapacities", []string{"get", "list", "watch", "create", "update", "patch", "delete"}, true},
		{"", "pods", []string{"get"}, true}, // --capacity-ownerref-level=0
		events,
	},
	"csi-snapshotter": {
		{"snapshot.storage.k8s.io", "volumesnapshotclasses", read, false},
		{"snapshot.storage.k8s.io", "volumesnapshotcontents", []string{"get", "list", "watch", "update", "patch"}, false},
		{"snapshot.storage.k8s.io", "volumesnapshotcontents/status", []string{"update", "patch"}, false},
		{"", "secrets", []string{"get"}, true},
		events,
	},
	"csi-resizer": {
		{"", "persistentvolumes", []string{"get", "list", "watch", "patch"}, false},
		{"", "persistentvolumeclaims", read, false},
		{"", "persistentvolumeclaims/status", []string{"patch"}, false},
		{"", "pods", read, false},
		{"coordination.k8s.io", "leases", []string{"get", "watch", "list", "delete", "update", "create"}, true},
		events,
	},
}

// TestRBAC checks the node DaemonSet's service account is granted what
// each of its sidecars needs, and that every binding points at a role and
// a service account that exist under deploy/.
func TestRBAC(t *testing.T) {
	ds, m := nodeDaemonSet(t)
	ns, sa := ds.Namespace, ds.Spec.Template.Spec.ServiceAccountName
	if sa == "" || sa == "default" {
		t.Fatalf("%s: the DaemonSet needs its own service account, has %q", m, sa)
	}
	cluster, local := grantedRules(t, ns, sa)
	for img, list := range needs {
		sidecar(t, &ds.Spec.Template.Spec, img)
		for _, a := range list {
			rules := cluster
			if a.namespaced {
				rules = append(slices.Clone(cluster), local...)
			}
			for _, v := range a.verbs {
				if !allows(rules, a.group, a.resource, v) {
					t.Errorf("%s needs %q on %s (group %q); service account %s/%s lacks it", img, v, a.resource, a.group, ns, sa)
				}
			}
		}
	}
}

// grantedRules collects the rules bound to namespace/sa: cluster-wide ones
// from ClusterRoleBindings, and those of RoleBindings in namespace.
func grantedRules(t *testing.T, namespace, sa string) (cluster, local []rbacv1.PolicyRule) {
	t.Helper()
	croles, _ := objectsOf[rbacv1.ClusterRole](t, false)
	roles, _ := objectsOf[rbacv1.Role](t, false)
	sas := map[string]bool{}
	for _, m := range manifests(t) {
		if m.Key == "v1/ServiceAccount" {
			meta, _ := objectMeta(m.Obj)
			sas[meta.GetNamespace()+"/"+meta.GetName()] = true
		}
	}
	if !sas[namespace+"/"+sa] {
		t.Errorf("ServiceAccount %s/%s is not under deploy/", namespace, sa)
	}
	find := func(ref rbacv1.RoleRef, ns string) []rbacv1.PolicyRule {
		for _, r := range croles {
			if ref.Kind == "ClusterRole" && r.Name == ref.Name {
				return r.Rules
			}
		}
		for _, r := range roles {
			if ref.Kind == "Role" && r.Name == ref.Name && r.Namespace == ns {
				return r.Rules
			}
		}
		t.Errorf("binding refers to %s %q, which is not under deploy/", ref.Kind, ref.Name)
		return nil
	}
	bound := func(subjects []rbacv1.Subject, bindingNS string) bool {
		found := false
		for _, s := range subjects {
			if s.Kind == rbacv1.ServiceAccountKind && !sas[s.Namespace+"/"+s.Name] {
				t.Errorf("binding in %q names ServiceAccount %s/%s, which is not under deploy/", bindingNS, s.Namespace, s.Name)
			}
			found = found || (s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == namespace)
		}
		return found
	}
	crbs, _ := objectsOf[rbacv1.ClusterRoleBinding](t, false)
	for _, b := range crbs {
		if rules := find(b.RoleRef, ""); bound(b.Subjects, "") {
			cluster = append(cluster, rules...)
		}
	}
	rbs, _ := objectsOf[rbacv1.RoleBinding](t, false)
	for _, b := range rbs {
		if rules := find(b.RoleRef, b.Namespace); bound(b.Subjects, b.Namespace) && b.Namespace == namespace {
			local = append(local, rules...)
		}
	}
	return cluster, local
}

// allows reports whether any rule grants verb on group/resource.
func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if (slices.Contains(r.APIGroups, group) || slices.Contains(r.APIGroups, "*")) &&
			(slices.Contains(r.Resources, resource) || slices.Contains(r.Resources, "*")) &&
			(slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) {
			return true
		}
	}
	return false
}
