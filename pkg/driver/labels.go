package driver

// Labels the driver records on lvols (backend.LVol.Labels). The pool never
// interprets them; they carry what the node and later calls must know.
const (
	// labelFSType is the filesystem type on the volume: requested at
	// creation, or found in a restored backup. Empty for block volumes.
	labelFSType = "fsType"
	// labelAccessType is "block" or "mount", from the creating capability.
	labelAccessType = "accessType"
	// labelRestoredFrom names the backup a volume was restored from
	// (TARGET:CHAIN@BACKUP). Such a volume is never formatted by the node.
	labelRestoredFrom = "restoredFrom"
	// labelState is "restoring" while a restore fills the lvol; absent once ready.
	labelState = "state"
	// labelParams is a digest of the creation request's parameters, so that
	// the same name with other parameters is AlreadyExists.
	labelParams = "params"
	// labelPVCName, labelPVCNamespace and labelPVName come from the
	// external-provisioner's --extra-create-metadata parameters.
	labelPVCName      = "pvcName"
	labelPVCNamespace = "pvcNamespace"
	labelPVName       = "pvName"
)

const (
	accessBlock    = "block"
	accessMount    = "mount"
	stateRestoring = "restoring"
)

// labelHidden marks a snapshot the driver keeps for itself (the base of the
// next incremental backup); ListSnapshots does not show it.
const labelHidden = "hidden"

// Labels of the local snapshot behind a backup.
const (
	// labelBackupRef is the backup's snapshot id ("backup:TARGET:CHAIN@ID").
	labelBackupRef = "backupRef"
	// labelBackupState is "uploading", "done" or "failed".
	labelBackupState = "backupState"
	// labelBackupError is the cause of a failed upload.
	labelBackupError = "backupError"
	// labelBackupCode is the gRPC code name of that cause (chainCode).
	labelBackupCode = "backupCode"
	// labelBackupDoneAt is when the upload finished (doneAtFormat): the
	// last one done of a chain is its latest backup and next base.
	labelBackupDoneAt = "backupDoneAt"
	// labelBackupUnreported is "true" until a CreateSnapshot answered
	// ready for the backup; until then the snapshot is kept, as the record
	// of its name's id (absent on snapshots of older drivers: reported).
	labelBackupUnreported = "backupUnreported"
)

// doneAtFormat is labelBackupDoneAt's format: fixed width, so that its
// values sort as strings in time order.
const doneAtFormat = "20060102T150405.000000000Z"

const (
	backupUploading = "uploading"
	backupDone      = "done"
	backupFailed    = "failed"
)

// labelRestoreRef is the concrete backup a restoring volume is filled
// from ("TARGET:CHAIN@ID", "latest" resolved), so a retry after a driver
// restart resumes the same restore.
const labelRestoreRef = "restoreRef"
