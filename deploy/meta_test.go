package deploy

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// clusterScoped lists the kinds used here that have no namespace.
var clusterScoped = map[string]bool{
	"v1/Namespace": true,
	"rbac.authorization.k8s.io/v1/ClusterRole":         true,
	"rbac.authorization.k8s.io/v1/ClusterRoleBinding":  true,
	"storage.k8s.io/v1/CSIDriver":                      true,
	"storage.k8s.io/v1/StorageClass":                   true,
	"snapshot.storage.k8s.io/v1/VolumeSnapshotClass":   true,
	"snapshot.storage.k8s.io/v1/VolumeSnapshotContent": true,
	"apiextensions.k8s.io/v1/CustomResourceDefinition": true,
}

// objectMeta returns an API object's metadata; ok is false for objects
// without any (kustomizations).
func objectMeta(obj any) (metav1.Object, bool) {
	m, err := meta.Accessor(obj)
	return m, err == nil
}
