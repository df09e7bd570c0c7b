package chainvol_test

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// snapshotMetadataService is cbt.storage.k8s.io/v1alpha1's
// SnapshotMetadataService (external-snapshot-metadata's CRD: cluster
// scoped, named after the driver), its fields as the CRD has them.
type snapshotMetadataService struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              struct {
		Address  string `json:"address"`
		Audience string `json:"audience"`
		CACert   []byte `json:"caCert"`
	} `json:"spec"`
}

func init() {
	types["cbt.storage.k8s.io/v1alpha1/SnapshotMetadataService"] = func() any { return &snapshotMetadataService{} }
}

// TestChartSnapshotMetadata (issue 28): off by default, nothing of the
// sidecar renders; with snapshotMetadata.enabled the node plugin runs the
// external-snapshot-metadata sidecar on the driver's socket with its TLS
// Secret, a node-local Service on its port, the SnapshotMetadataService
// named after the driver that points at it with the CA, and the RBAC the
// sidecar needs (token and access reviews, the snapshots it resolves).
// The sidecar itself is not run here: only the rendering is tested.
func TestChartSnapshotMetadata(t *testing.T) {
	for _, o := range render(t, nil) {
		if strings.Contains(id(o), "snapshot-metadata") || strings.Contains(id(o), "SnapshotMetadataService") {
			t.Errorf("rendered by default: %s", id(o))
		}
		if ds, ok := o.Obj.(*appsv1.DaemonSet); ok && container(ds, "csi-snapshot-metadata") != nil {
			t.Error("the DaemonSet runs csi-snapshot-metadata by default")
		}
	}
	objs := render(t, map[string]any{"snapshotMetadata": map[string]any{"enabled": true, "tlsSecret": "cbt-tls", "caCert": "Q0E="}})
	var sms *snapshotMetadataService
	var svc *corev1.Service
	var ds *appsv1.DaemonSet
	var role *rbacv1.ClusterRole
	var binding *rbacv1.ClusterRoleBinding
	for _, o := range objs {
		switch x := o.Obj.(type) {
		case *snapshotMetadataService:
			sms = x
		case *corev1.Service:
			if x.Name == "chainvol-snapshot-metadata" {
				svc = x
			}
		case *appsv1.DaemonSet:
			ds = x
		case *rbacv1.ClusterRole:
			if x.Name == "chainvol-snapshot-metadata" {
				role = x
			}
		case *rbacv1.ClusterRoleBinding:
			if x.Name == "chainvol-snapshot-metadata" {
				binding = x
			}
		}
	}
	if sms == nil || svc == nil || ds == nil || role == nil || binding == nil {
		t.Fatalf("enabled: SnapshotMetadataService %v, Service %v, DaemonSet %v, ClusterRole %v, binding %v", sms != nil, svc != nil, ds != nil, role != nil, binding != nil)
	}
	if sms.Name != "chainvol.csi.io" || sms.Spec.Address != "chainvol-snapshot-metadata.chainvol-system:6443" || string(sms.Spec.CACert) != "CA" || sms.Spec.Audience == "" {
		t.Errorf("SnapshotMetadataService %s: %+v", sms.Name, sms.Spec)
	}
	if svc.Spec.InternalTrafficPolicy == nil || *svc.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyLocal ||
		len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 6443 || svc.Spec.Ports[0].TargetPort.StrVal != "snapshot-meta" {
		t.Errorf("Service: %+v", svc.Spec)
	}
	c := container(ds, "csi-snapshot-metadata")
	if c == nil {
		t.Fatal("the DaemonSet has no csi-snapshot-metadata container")
	}
	for _, arg := range []string{"--csi-address=/csi/csi.sock", "--port=6443", "--tls-cert=/etc/chainvol/snapshot-metadata-tls/tls.crt", "--tls-key=/etc/chainvol/snapshot-metadata-tls/tls.key"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("csi-snapshot-metadata args %v lack %s", c.Args, arg)
		}
	}
	if len(c.Ports) != 1 || c.Ports[0].Name != "snapshot-meta" || c.Ports[0].ContainerPort != 6443 {
		t.Errorf("csi-snapshot-metadata ports %+v", c.Ports)
	}
	secret := false
	for _, v := range ds.Spec.Template.Spec.Volumes {
		secret = secret || v.Secret != nil && v.Secret.SecretName == "cbt-tls" && v.Name == "snapshot-metadata-tls"
	}
	if !secret {
		t.Error("no volume of the TLS Secret cbt-tls")
	}
	verbs := map[string]bool{}
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			for _, v := range r.Verbs {
				verbs[res+"/"+v] = true
			}
		}
	}
	for _, want := range []string{"snapshotmetadataservices/get", "tokenreviews/create", "subjectaccessreviews/create", "volumesnapshots/get", "volumesnapshotcontents/get"} {
		if !verbs[want] {
			t.Errorf("ClusterRole chainvol-snapshot-metadata lacks %s", want)
		}
	}
	if len(binding.Subjects) != 1 || binding.Subjects[0].Name != ds.Spec.Template.Spec.ServiceAccountName || binding.RoleRef.Name != role.Name {
		t.Errorf("binding %+v to %+v", binding.Subjects, binding.RoleRef)
	}
}

// container returns the container called name of ds, nil when none.
func container(ds *appsv1.DaemonSet, name string) *corev1.Container {
	for i, c := range ds.Spec.Template.Spec.Containers {
		if c.Name == name {
			return &ds.Spec.Template.Spec.Containers[i]
		}
	}
	return nil
}
