package main

import (
	"fmt"
	"strings"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// Labels and annotations of imported snapshot objects.
const (
	// managedByLabel routes a VolumeSnapshotContent to the csi-snapshotter
	// sidecar of one node when the sidecars run per node
	// (--node-deployment): each watches only contents labelled with its
	// node's name (external-snapshotter v8 utils.VolumeSnapshotContentManagedByLabel;
	// docs/deploy.md). Any node running chainvol can serve a backup.
	managedByLabel = "snapshot.storage.kubernetes.io/managed-by"
	// importedLabel marks objects made by "k8s import" (value "true").
	importedLabel = "chainvol.csi.io/imported"
	// backupAnnotation holds TARGET:CHAIN@ID; createdAnnotation the
	// backup's creation time (RFC 3339, UTC).
	backupAnnotation  = "chainvol.csi.io/backup"
	createdAnnotation = "chainvol.csi.io/created-at"
	// Secrets the sidecar passes to DeleteSnapshot of a pre-provisioned
	// content (external-snapshotter: AnnDeletionSecretRefName/Namespace).
	deletionSecretName      = "snapshot.storage.kubernetes.io/deletion-secret-name"
	deletionSecretNamespace = "snapshot.storage.kubernetes.io/deletion-secret-namespace"
)

// importOptions are the settings of one import.
type importOptions struct {
	target         string            // the target's configured name (in the handles)
	driver         string            // CSI driver name
	node           string            // managed-by node; "" omits the label
	policy         string            // Retain or Delete
	class          string            // VolumeSnapshotClass; "" none
	nsMap          map[string]string // chain namespace -> cluster namespace
	deletionSecret string            // NAMESPACE/NAME or ""
}

// snapshotPair is one backup as a pre-provisioned VolumeSnapshotContent
// and the VolumeSnapshot bound to it.
type snapshotPair struct {
	Content  *snapv1.VolumeSnapshotContent
	Snapshot *snapv1.VolumeSnapshot
}

// pairFor builds the objects of backup m. The VolumeSnapshot lands in the
// chain's namespace (the chain NAMESPACE/NAME, mapped by o.nsMap) and is
// called snapshotName (NAME-ID in lower case for a default id); the
// content's name is derived from the handle, so importing twice gives the
// same objects. Errors name a chain that maps to no valid namespace.
func pairFor(m *s3chain.Manifest, o importOptions) (snapshotPair, error) {
	ns, name, ok := strings.Cut(m.Chain, "/")
	if mapped, isMapped := o.nsMap[ns]; isMapped {
		ns = mapped
	}
	if !ok || strings.Contains(name, "/") {
		return snapshotPair{}, fmt.Errorf("chain %q is not NAMESPACE/NAME, so it has no VolumeSnapshot namespace", m.Chain)
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return snapshotPair{}, fmt.Errorf("chain %q: namespace %q is not a Kubernetes namespace (%s); map it with --namespace-map %s=NEW",
			m.Chain, ns, strings.Join(errs, "; "), strings.SplitN(m.Chain, "/", 2)[0])
	}
	ref := target.Ref{Target: o.target, Chain: m.Chain, Backup: m.ID}
	handle := backupid.Format(ref)
	cname, snapName := contentName(handle), snapshotName(m.Chain, m.ID)
	meta := func(n, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: n, Namespace: ns, Labels: map[string]string{importedLabel: "true"},
			Annotations: map[string]string{
				backupAnnotation:  ref.String(),
				createdAnnotation: m.CreatedAt.UTC().Format(time.RFC3339Nano),
			}}
	}
	c := &snapv1.VolumeSnapshotContent{
		TypeMeta:   metav1.TypeMeta{APIVersion: snapv1.SchemeGroupVersion.String(), Kind: "VolumeSnapshotContent"},
		ObjectMeta: meta(cname, ""),
		Spec: snapv1.VolumeSnapshotContentSpec{
			VolumeSnapshotRef: corev1.ObjectReference{APIVersion: snapv1.SchemeGroupVersion.String(), Kind: "VolumeSnapshot", Namespace: ns, Name: snapName},
			DeletionPolicy:    snapv1.DeletionPolicy(o.policy),
			Driver:            o.driver,
			Source:            snapv1.VolumeSnapshotContentSource{SnapshotHandle: &handle},
		},
	}
	if mode := volumeMode(m.VolumeMode); mode != nil {
		c.Spec.SourceVolumeMode = mode
	}
	if o.node != "" {
		c.Labels[managedByLabel] = o.node
	}
	if sns, sname, ok := strings.Cut(o.deletionSecret, "/"); ok {
		c.Annotations[deletionSecretNamespace], c.Annotations[deletionSecretName] = sns, sname
	}
	if o.class != "" {
		c.Spec.VolumeSnapshotClassName = &o.class
	}
	s := &snapv1.VolumeSnapshot{
		TypeMeta:   metav1.TypeMeta{APIVersion: snapv1.SchemeGroupVersion.String(), Kind: "VolumeSnapshot"},
		ObjectMeta: meta(snapName, ns),
		Spec:       snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: &cname}},
	}
	if o.class != "" {
		s.Spec.VolumeSnapshotClassName = &o.class
	}
	return snapshotPair{Content: c, Snapshot: s}, nil
}

// distinctSnapshots refuses, as a usage error, two backups whose
// VolumeSnapshots would share a namespace and name: chains of namespaces
// that --namespace-map merges, with the same NAME and default id.
func distinctSnapshots(pairs []snapshotPair) error {
	seen := map[string]string{}
	for _, p := range pairs {
		key, b := p.Snapshot.Namespace+"/"+p.Snapshot.Name, p.Snapshot.Annotations[backupAnnotation]
		if other, ok := seen[key]; ok {
			return usagef("backups %s and %s would both be volumesnapshot %s: --namespace-map puts their chains into one namespace; map them to different namespaces",
				other, b, key)
		}
		seen[key] = b
	}
	return nil
}

// volumeMode maps a manifest's volume mode (any letter case) to the API's.
func volumeMode(m string) *corev1.PersistentVolumeMode {
	var v corev1.PersistentVolumeMode
	switch strings.ToLower(m) {
	case "block":
		v = corev1.PersistentVolumeBlock
	case "filesystem":
		v = corev1.PersistentVolumeFilesystem
	default:
		return nil
	}
	return &v
}

// parseNamespaceMap reads repeated OLD=NEW flags.
func parseNamespaceMap(pairs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, p := range pairs {
		old, nw, ok := strings.Cut(p, "=")
		if !ok || old == "" || len(validation.IsDNS1123Label(nw)) > 0 {
			return nil, usagef("--namespace-map %q must be OLD=NEW, NEW a namespace name", p)
		}
		m[old] = nw
	}
	return m, nil
}
