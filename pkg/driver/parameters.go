package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"sort"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/retention"
)

// Parameter keys of CreateVolume (StorageClass parameters).
const (
	// ParamFromBackup asks for a volume restored from an archived backup:
	// "[TARGET:]CHAIN@BACKUP", BACKUP an id, "latest", "before:RFC3339"
	// (newest at or before) or "group:ID"; ${pvc.namespace} and
	// ${pvc.name} are filled from the external-provisioner's metadata.
	ParamFromBackup = "fromBackup"
	// ParamBackupTarget names the backup target when fromBackup does not.
	ParamBackupTarget = "backupTarget"
	// ParamRestoreMode is how a restore fills the volume: "full" (the
	// default: CreateVolume answers once every block is written) or
	// "instant" (CreateVolume answers once the backup is admitted; the node
	// serves the volume at once, fetching blocks on first touch, while a
	// background job hydrates the rest: docs/ARCHITECTURE.md "Instant
	// restore"). Requests that restore nothing ignore it.
	ParamRestoreMode = "restoreMode"

	// Keys the external-provisioner adds with --extra-create-metadata.
	paramPVCName      = "csi.storage.k8s.io/pvc/name"
	paramPVCNamespace = "csi.storage.k8s.io/pvc/namespace"
	paramPVName       = "csi.storage.k8s.io/pv/name"
	// reservedPrefix marks keys the CO owns; they are accepted and ignored
	// unless listed above (Kubernetes CSI external-provisioner conventions).
	reservedPrefix = "csi.storage.k8s.io/"
)

// volumeParams are the parsed CreateVolume parameters.
type volumeParams struct {
	FromBackup   string
	BackupTarget string
	// Instant is restoreMode "instant".
	Instant      bool
	PVCName      string
	PVCNamespace string
	PVName       string
	// Digest identifies the parameter set, to tell an idempotent retry from
	// a conflicting request with the same name.
	Digest string
}

// validVolumeParams are the keys a StorageClass may set (besides reserved ones).
var validVolumeParams = []string{ParamFromBackup, ParamBackupTarget, ParamRestoreMode}

// Values of ParamRestoreMode.
const (
	restoreFull    = "full"
	restoreInstant = "instant"
)

// parseVolumeParams validates CreateVolume parameters. Unknown keys and a
// restoreMode other than "full" or "instant" are InvalidArgument naming
// what is valid.
func parseVolumeParams(params map[string]string) (volumeParams, error) {
	p := volumeParams{
		FromBackup:   params[ParamFromBackup],
		BackupTarget: params[ParamBackupTarget],
		PVCName:      params[paramPVCName],
		PVCNamespace: params[paramPVCNamespace],
		PVName:       params[paramPVName],
		Digest:       digestParams(params),
	}
	switch mode := params[ParamRestoreMode]; mode {
	case "", restoreFull:
	case restoreInstant:
		p.Instant = true
	default:
		return p, status.Errorf(codes.InvalidArgument, "parameter %s must be %q or %q, not %q", ParamRestoreMode, restoreFull, restoreInstant, mode)
	}
	for k := range params {
		if strings.HasPrefix(k, reservedPrefix) || slices.Contains(validVolumeParams, k) {
			continue
		}
		return p, status.Errorf(codes.InvalidArgument, "unknown parameter %q; valid parameters are %s (and %s* keys)",
			k, strings.Join(validVolumeParams, ", "), reservedPrefix)
	}
	return p, nil
}

// digestParams hashes the parameters that define the volume's content,
// leaving out per-PVC metadata that does not.
func digestParams(params map[string]string) string {
	keys := make([]string, 0, len(params))
	for k := range params {
		if k == paramPVName {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%q=%q\n", k, params[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Parameter keys of CreateSnapshot (VolumeSnapshotClass parameters).
const (
	// ParamBackup "true" archives the snapshot to a backup target; "false"
	// or absent keeps a local reflink snapshot only.
	ParamBackup = "backup"
)

// snapshotParams are the parsed CreateSnapshot parameters.
type snapshotParams struct {
	Backup       bool
	BackupTarget string
	BlockSize    int64 // bytes; 0: the chain's (ParamBlockSize)
	// Retention is the class's retention policy (keepLast, ...); nil when
	// it sets none (parameters_retention.go).
	Retention *retention.Policy
}

// validSnapshotParams are the keys a VolumeSnapshotClass may set.
var validSnapshotParams = append([]string{ParamBackup, ParamBackupTarget, ParamBlockSize}, retentionParams...)

// parseSnapshotParams validates CreateSnapshot parameters; unknown keys,
// a backup value other than "true"/"false", a bad retention rule and a
// retention rule without backup "true" are InvalidArgument naming the key.
func parseSnapshotParams(params map[string]string) (snapshotParams, error) {
	var p snapshotParams
	var rp retention.Policy
	for k, v := range params {
		switch {
		case slices.Contains(retentionParams, k):
			if err := parseRetentionParam(&rp, k, v); err != nil {
				return p, err
			}
			if !rp.Empty() {
				p.Retention = &rp
			}
			if params[ParamBackup] != "true" {
				return p, status.Errorf(codes.InvalidArgument, "parameter %s needs %s: \"true\" (a retention policy applies to backups)", k, ParamBackup)
			}
		case strings.HasPrefix(k, reservedPrefix):
		case k == ParamBackup:
			if v != "true" && v != "false" {
				return p, status.Errorf(codes.InvalidArgument, "parameter %s must be \"true\" or \"false\", not %q", ParamBackup, v)
			}
			p.Backup = v == "true"
		case k == ParamBackupTarget:
			p.BackupTarget = v
		case k == ParamBlockSize:
			var err error
			if p.BlockSize, err = parseBlockSize(v); err != nil {
				return p, err
			}
		default:
			return p, status.Errorf(codes.InvalidArgument, "unknown snapshot parameter %q; valid parameters are %s (and %s* keys)",
				k, strings.Join(validSnapshotParams, ", "), reservedPrefix)
		}
	}
	if p.BackupTarget != "" && !p.Backup {
		return p, status.Errorf(codes.InvalidArgument, "parameter %s needs %s: \"true\"", ParamBackupTarget, ParamBackup)
	}
	if p.BlockSize != 0 && !p.Backup {
		return p, status.Errorf(codes.InvalidArgument, "parameter %s needs %s: \"true\"", ParamBlockSize, ParamBackup)
	}
	return p, nil
}
