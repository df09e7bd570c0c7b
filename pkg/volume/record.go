package volume

import (
	"strconv"
	"time"
)

// Record is what the driver keeps on one lvol (backend.LVol.Labels): the
// facts later calls and the node must know about a volume or snapshot, and
// the state of its restore or backup upload. Encode and Decode are the only
// code that reads or writes those labels; the label keys and value formats
// below are on disk in existing pools and must not change.
//
// The zero Record is a ready volume without any recorded facts.
type Record struct {
	// AccessType is AccessBlock or AccessMount, from the creating capability
	// ("" on lvols of drivers that did not record it).
	AccessType string
	// FSType is the filesystem type on the volume: requested at creation,
	// or found in a restored backup. Empty for block volumes.
	FSType string
	// RestoredFrom is the origin of a volume restored from a backup
	// ("TARGET:CHAIN@ID"), inherited by its clones and snapshots. Such a
	// volume is never formatted by the node.
	RestoredFrom RecordedRef
	// Phase is PhaseReady, PhaseRestoring while a restore fills the lvol,
	// or PhaseHydrating while an instant restore's background job does.
	Phase Phase
	// RestoreRef is the concrete backup a restoring or hydrating volume is
	// filled from ("TARGET:CHAIN@ID", a selector resolved), so that a retry
	// or the driver's start after a restart resumes the same restore.
	RestoreRef RecordedRef
	// RestoreAllocBytes is what the restore allocates in the pool in all
	// (the manifest's AllocatedBytes), in bytes; 0 when not restoring or
	// restored before admission existed.
	RestoreAllocBytes int64
	// ParamsDigest identifies the creation request's parameters, so that
	// the same name with other parameters is told apart.
	ParamsDigest string
	// PVCName, PVCNamespace and PVName come from the external-provisioner's
	// --extra-create-metadata parameters.
	PVCName, PVCNamespace, PVName string

	// Hidden marks a snapshot the driver keeps for itself (a backup's
	// local snapshot); ListSnapshots does not show it.
	Hidden bool
	// BackupRef is the snapshot id of the backup behind a snapshot
	// ("backup:TARGET:CHAIN@ID", backupid.go); zero for a plain snapshot.
	BackupRef RecordedID
	// Upload is the state of that backup's upload.
	Upload UploadState
	// UploadError is the cause of a failed upload, UploadClass its class
	// (Classify), from which the driver's answer takes its code.
	UploadError string
	UploadClass Class
	// UploadDoneAt is when the upload finished (UTC, nanoseconds): the last
	// one done of a chain is its latest backup and next base. Zero until
	// then, and on snapshots of older drivers.
	UploadDoneAt time.Time
	// UploadFailedAt is when an upload of the backup last failed for good
	// (UTC, nanoseconds); a later success keeps it. Zero when none has.
	UploadFailedAt time.Time
	// Unreported is true until a CreateSnapshot answered ready for the
	// backup; until then the snapshot is kept as the record of its name's
	// id (false on snapshots of older drivers: reported).
	Unreported bool
	// BlockSize is the block size the VolumeSnapshotClass asked for the
	// backup, in bytes; 0 for the chain's.
	BlockSize int64

	// GroupID is the group snapshot id of a group member (also the
	// manifests' groupId), GroupName the CO's name of the group, and
	// GroupMember the member's name in the manifest: its chain.
	GroupID, GroupName, GroupMember string

	// legacyCode is the gRPC code name an older driver recorded for a
	// failed upload (label backupCode), read into UploadClass; the next
	// Patch replaces it by the class label.
	legacyCode string
}

// Access types of Record.AccessType.
const (
	AccessBlock = "block"
	AccessMount = "mount"
)

// Phase is where a volume lvol is in its life.
type Phase string

const (
	// PhaseReady: the volume can be used (no state label).
	PhaseReady Phase = ""
	// PhaseRestoring: a restore is filling the lvol; it is not a volume yet.
	PhaseRestoring Phase = "restoring"
	// PhaseHydrating: an instant restore (restoreMode: instant) answered
	// the volume at once and a background job fills the lvol; the node
	// stages it over its lazy image (pkg/lazy), and every other operation
	// on it waits until the job ends (ErrHydrating). An older driver reads
	// any state label as a restore still running.
	PhaseHydrating Phase = "hydrating"
)

// filling reports whether a restore still writes the lvol (restoring or
// hydrating): its remaining bytes are promised to it (space.go).
func (p Phase) filling() bool { return p == PhaseRestoring || p == PhaseHydrating }

// UploadState is the state of a backup snapshot's upload.
type UploadState string

const (
	// UploadNone: the snapshot is no backup's.
	UploadNone UploadState = ""
	// Uploading: the upload runs, or restarts on the next call.
	Uploading UploadState = "uploading"
	// Uploaded: the backup is durable in its target.
	Uploaded UploadState = "done"
	// UploadFailed: the last upload failed (UploadError); it is retried.
	UploadFailed UploadState = "failed"
	// UploadRefused: the upload failed for good (Final: UploadError says
	// why); it is never retried, and the snapshot waits for its deletion.
	// (An older driver reads it as an upload to restart, which fails again.)
	UploadRefused UploadState = "refused"
)

// Ready reports whether the lvol is a usable volume or snapshot: no
// restore fills it (any state label other than none counts as busy, as
// older drivers wrote it).
func (r Record) Ready() bool { return r.Phase == PhaseReady }

// Usable reports whether the volume can be staged and listed: ready, or
// hydrating (an instant restore serves it while it fills).
func (r Record) Usable() bool { return r.Phase == PhaseReady || r.Phase == PhaseHydrating }

// IsBackup reports whether the snapshot is a backup's local snapshot.
func (r Record) IsBackup() bool { return !r.BackupRef.IsZero() }

// Label keys, on disk in existing pools.
const (
	labelFSType           = "fsType"
	labelAccessType       = "accessType"
	labelRestoredFrom     = "restoredFrom"
	labelState            = "state"
	labelRestoreRef       = "restoreRef"
	labelRestoreAlloc     = "restoreAllocatedBytes"
	labelParams           = "params"
	labelPVCName          = "pvcName"
	labelPVCNamespace     = "pvcNamespace"
	labelPVName           = "pvName"
	labelHidden           = "hidden"
	labelBackupRef        = "backupRef"
	labelBackupState      = "backupState"
	labelBackupError      = "backupError"
	labelBackupClass      = "backupErrorClass"
	labelBackupCode       = "backupCode" // read only: older drivers' gRPC code name
	labelBackupDoneAt     = "backupDoneAt"
	labelBackupFailedAt   = "backupFailedAt"
	labelBackupUnreported = "backupUnreported"
	labelBackupBlockSize  = "backupBlockSize"
	labelGroupID          = "groupId"
	labelGroupName        = "groupName"
	labelGroupMember      = "groupMember"
)

// doneAtFormat is labelBackupDoneAt's and labelBackupFailedAt's format: fixed width, so that its
// values sort as strings in time order.
const doneAtFormat = "20060102T150405.000000000Z"

// labelTrue is the value of the boolean labels.
const labelTrue = "true"

// fields lists each string-valued field with its label key, for Encode
// and Decode alike (the references, typed, are coded beside them).
func (r *Record) fields() []struct {
	key string
	val *string
} {
	return []struct {
		key string
		val *string
	}{
		{labelFSType, &r.FSType}, {labelAccessType, &r.AccessType}, {labelParams, &r.ParamsDigest},
		{labelPVCName, &r.PVCName}, {labelPVCNamespace, &r.PVCNamespace}, {labelPVName, &r.PVName},
		{labelBackupError, &r.UploadError},
		{labelGroupID, &r.GroupID}, {labelGroupName, &r.GroupName}, {labelGroupMember, &r.GroupMember},
	}
}

// Encode returns r as lvol labels. Empty values are left out (the pool
// drops them too: an absent label and an empty one mean the same).
func (r Record) Encode() map[string]string {
	l := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			l[k] = v
		}
	}
	for _, f := range r.fields() {
		set(f.key, *f.val)
	}
	set(labelRestoredFrom, r.RestoredFrom.String())
	set(labelRestoreRef, r.RestoreRef.String())
	set(labelBackupRef, r.BackupRef.String())
	set(labelState, string(r.Phase))
	set(labelBackupState, string(r.Upload))
	set(labelBackupClass, string(r.UploadClass))
	if r.RestoreAllocBytes > 0 {
		set(labelRestoreAlloc, strconv.FormatInt(r.RestoreAllocBytes, 10))
	}
	if r.BlockSize > 0 {
		set(labelBackupBlockSize, strconv.FormatInt(r.BlockSize, 10))
	}
	if !r.UploadDoneAt.IsZero() {
		set(labelBackupDoneAt, r.UploadDoneAt.UTC().Format(doneAtFormat))
	}
	if !r.UploadFailedAt.IsZero() {
		set(labelBackupFailedAt, r.UploadFailedAt.UTC().Format(doneAtFormat))
	}
	if r.Hidden {
		set(labelHidden, labelTrue)
	}
	if r.Unreported {
		set(labelBackupUnreported, labelTrue)
	}
	return l
}

// Decode reads the record from lvol labels, of this driver or an older
// one. Unknown keys are ignored; a malformed number or time reads as zero
// (what the driver did before: such a label never stopped a call), any
// non-empty boolean label is true, and a reference that does not parse is
// kept with its text (record_ref.go): set, written back unchanged, its
// error returned by its Ref.
func Decode(labels map[string]string) Record {
	var r Record
	for _, f := range r.fields() {
		*f.val = labels[f.key]
	}
	r.RestoredFrom, r.RestoreRef = ReadRef(labels[labelRestoredFrom]), ReadRef(labels[labelRestoreRef])
	r.BackupRef = ReadID(labels[labelBackupRef])
	r.Phase = Phase(labels[labelState])
	r.Upload = UploadState(labels[labelBackupState])
	r.UploadClass = Class(labels[labelBackupClass])
	if r.legacyCode = labels[labelBackupCode]; r.UploadClass == ClassNone {
		r.UploadClass = legacyCodeClass(r.legacyCode)
	}
	r.RestoreAllocBytes, _ = strconv.ParseInt(labels[labelRestoreAlloc], 10, 64)
	r.BlockSize, _ = strconv.ParseInt(labels[labelBackupBlockSize], 10, 64)
	if t, err := time.Parse(doneAtFormat, labels[labelBackupDoneAt]); err == nil {
		r.UploadDoneAt = t
	}
	if t, err := time.Parse(doneAtFormat, labels[labelBackupFailedAt]); err == nil {
		r.UploadFailedAt = t
	}
	r.Hidden = labels[labelHidden] != ""
	r.Unreported = labels[labelBackupUnreported] != ""
	return r
}

// Patch returns the label changes that turn a record old into r, in the
// form backend.Pool.SetLabels takes: changed keys with their new value,
// removed keys with "" (which deletes them). An older driver's code label
// on old goes, its class written in its place.
func (r Record) Patch(old Record) map[string]string {
	from, to := old.Encode(), r.Encode()
	if old.legacyCode != "" {
		delete(from, labelBackupClass)
		from[labelBackupCode] = old.legacyCode
	}
	p := map[string]string{}
	for k, v := range to {
		if from[k] != v {
			p[k] = v
		}
	}
	for k := range from {
		if _, ok := to[k]; !ok {
			p[k] = ""
		}
	}
	return p
}
