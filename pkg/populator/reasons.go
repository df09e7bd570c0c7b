package populator

import (
	"regexp"
	"strings"
)

// Reasons of the events on a claim and of its Ready condition in the
// BackupSource's status. The failures are those issue 26 lists; each says
// what to do in its message.
const (
	ReasonWaitingForConsumer = "WaitingForFirstConsumer" // WaitForFirstConsumer class, no pod scheduled yet
	ReasonRestoring          = "Restoring"               // the driver restores (its progress in the message)
	ReasonPopulated          = "Populated"               // bound to the restored volume
	ReasonSourceMissing      = "SourceMissing"           // no BackupSource of that name (retried: it may be created)
	ReasonWrongKind          = "WrongKind"               // dataSourceRef names another kind of chainvol.csi.io, or another namespace
	ReasonInvalidReference   = "InvalidReference"        // the reference does not parse for this claim
	ReasonBackupNotFound     = "BackupNotFound"          // no such chain or backup (a missing member of a group)
	ReasonCredentials        = "CredentialsRejected"     // key or credentials wrong
	ReasonUnreachable        = "TargetUnreachable"       // retried with backoff
	ReasonFSTypeConflict     = "FSTypeConflict"          // the class asks another fsType than the backup's
	ReasonTooSmall           = "TooSmall"                // the claim is smaller than the backup
	ReasonRestoreFailed      = "RestoreFailed"           // any other refusal of the driver
	ReasonRetrying           = "Retrying"                // any other transient failure
)

// codePattern finds the gRPC code in a status text relayed by the
// external-provisioner or the csi-snapshotter ("rpc error: code = NotFound desc = ...").
var codePattern = regexp.MustCompile(`code = ([A-Za-z]+)`)

// Classify maps a failure message of the prime claim (the provisioner's
// ProvisioningFailed event) or of its snapshot content (the
// csi-snapshotter's status.error) to a reason, and reports whether it is
// permanent: a retry cannot succeed without the user changing something
// (gRPC codes per the driver's pkg/driver/errors.go classes).
func Classify(msg string) (reason string, permanent bool) {
	code := ""
	if m := codePattern.FindStringSubmatch(msg); m != nil {
		code = m[1]
	}
	low := strings.ToLower(msg)
	switch {
	case strings.Contains(low, "can not find snapshot") || strings.Contains(low, "cannot find snapshot") || code == "NotFound":
		return ReasonBackupNotFound, true
	case code == "PermissionDenied" || code == "Unauthenticated":
		return ReasonCredentials, true
	case code == "Unavailable":
		return ReasonUnreachable, false
	case strings.Contains(low, "fstype") && (code == "InvalidArgument" || code == "AlreadyExists"):
		return ReasonFSTypeConflict, true
	case code == "OutOfRange" || strings.Contains(low, "is less than the size"): // the provisioner's own check of the snapshot's restoreSize
		return ReasonTooSmall, true
	case code == "InvalidArgument" || code == "FailedPrecondition" || code == "AlreadyExists":
		return ReasonRestoreFailed, true
	case code == "Aborted" || code == "DeadlineExceeded":
		return ReasonRestoring, false // a restore in progress answers Aborted with its progress
	}
	return ReasonRetrying, false
}
