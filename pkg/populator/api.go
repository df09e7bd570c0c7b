// Package populator is chainvol's volume populator (KEP-1495, "volume
// populators"): a claim whose spec.dataSourceRef names a BackupSource
// (chainvol.csi.io/v1alpha1) is filled from a chainvol backup by the
// driver's own CreateVolume restore. The populator copies no bytes: it
// writes a pre-provisioned VolumeSnapshotContent + VolumeSnapshot whose
// handle names the backup (backupid.ParseSource: a selector is resolved
// by the driver), creates the prime claim in its own namespace with the
// user claim's class, size, access modes, volume mode and selected node,
// and when the prime claim is bound rebinds the PV to the user's claim
// (lib-volume-populator's protocol and names). docs/applications.md shows
// it from the user's side; docs/ARCHITECTURE.md says why this design.
package populator

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, Version and Kind of the populator's source object.
const (
	Group   = "chainvol.csi.io"
	Version = "v1alpha1"
	Kind    = "BackupSource"
)

// GroupVersion is chainvol.csi.io/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// BackupSource names the backup one claim, or every claim of a
// StatefulSet's volumeClaimTemplate, is filled from.
type BackupSource struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BackupSourceSpec   `json:"spec"`
	Status            BackupSourceStatus `json:"status,omitempty"`
}

// BackupSourceSpec is one backup reference, the parts of fromBackup's
// "[TARGET:]CHAIN@BACKUP" (backupid.ParseRef reads the joined form).
type BackupSourceSpec struct {
	// Target is the driver's name of the backup target; "" is the
	// populator's -default-target (the driver's default).
	Target string `json:"target,omitempty"`
	// Chain is the chain, "${pvc.namespace}" and "${pvc.name}" filled from
	// the claim (backupid.FillTemplate): "${pvc.namespace}/${pvc.name}"
	// gives claim data-db-3 the chain of data-db-3 and no other.
	Chain string `json:"chain"`
	// Backup is a backup id, "latest", "before:RFC3339" or "group:ID".
	Backup string `json:"backup"`
}

// BackupSourceStatus says what the source filled, per claim.
type BackupSourceStatus struct {
	Claims []ClaimStatus `json:"claims,omitempty"`
}

// ClaimStatus is the outcome for one claim of the source's namespace.
type ClaimStatus struct {
	// Name is the claim's name; UID tells a re-created claim apart.
	Name string `json:"name"`
	UID  string `json:"uid,omitempty"`
	// Backup is the reference after templates (TARGET:CHAIN@BACKUP).
	Backup string `json:"backup,omitempty"`
	// Resolved is the backup the driver restored (TARGET:CHAIN@ID, the
	// PV's restoredFrom volume attribute), once Ready.
	Resolved string `json:"resolved,omitempty"`
	// Conditions: Ready (True when bound; False with a reason otherwise).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// BackupSourceList is a list of BackupSources.
type BackupSourceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []BackupSource `json:"items"`
}

// AddToScheme registers the kinds with a scheme.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &BackupSource{}, &BackupSourceList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// DeepCopyObject implements runtime.Object.
func (b *BackupSource) DeepCopyObject() runtime.Object { return b.DeepCopy() }

// DeepCopy returns a copy sharing nothing with b.
func (b *BackupSource) DeepCopy() *BackupSource {
	if b == nil {
		return nil
	}
	out := *b
	b.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Claims = make([]ClaimStatus, len(b.Status.Claims))
	for i, c := range b.Status.Claims {
		c.Conditions = append([]metav1.Condition(nil), c.Conditions...)
		for j := range c.Conditions {
			b.Status.Claims[i].Conditions[j].DeepCopyInto(&c.Conditions[j])
		}
		out.Status.Claims[i] = c
	}
	if b.Status.Claims == nil {
		out.Status.Claims = nil
	}
	return &out
}

// DeepCopyObject implements runtime.Object.
func (l *BackupSourceList) DeepCopyObject() runtime.Object {
	out := *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	out.Items = make([]BackupSource, len(l.Items))
	for i := range l.Items {
		out.Items[i] = *l.Items[i].DeepCopy()
	}
	return &out
}
