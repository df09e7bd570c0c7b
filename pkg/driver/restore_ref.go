package driver

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// Templates a fromBackup parameter may use, filled from the
// external-provisioner's --extra-create-metadata parameters (the rules
// the volume populator shares: backupid.FillTemplate).
const (
	tmplPVCNamespace = backupid.TemplateNamespace
	tmplPVCName      = backupid.TemplateName
)

// restoreRef finds the backup a restore request names: the fromBackup
// parameter (templates filled, backupTarget as the default target) or a
// backup snapshot source. Errors are statuses: InvalidArgument, NotFound
// for a backup snapshot id that does not parse.
func restoreRef(vr volumeRequest) (target.Ref, error) {
	if id := vr.source.GetSnapshot().GetSnapshotId(); volume.IsBackupID(id) {
		if vr.params.FromBackup != "" {
			return target.Ref{}, status.Error(codes.InvalidArgument, "give either fromBackup or a backup snapshot source, not both")
		}
		r, err := volume.ParseBackupSource(id)
		if err != nil {
			return r, volumeError("", volume.Refuse(volume.ClassNotFound, "snapshot source %q: %v", id, err))
		}
		return r, nil
	}
	raw := vr.params.FromBackup
	if backupid.HasTemplate(raw) {
		if vr.params.PVCName == "" || vr.params.PVCNamespace == "" {
			return target.Ref{}, status.Errorf(codes.InvalidArgument, "%s %q uses %s/%s but the request carries no PVC metadata: run the external-provisioner with --extra-create-metadata",
				ParamFromBackup, raw, tmplPVCNamespace, tmplPVCName)
		}
		raw = backupid.FillTemplate(raw, vr.params.PVCNamespace, vr.params.PVCName)
	}
	r, err := target.ParseRef(raw)
	if err != nil {
		return r, status.Errorf(codes.InvalidArgument, "parameter %s: %v", ParamFromBackup, err)
	}
	if r.Target != "" && vr.params.BackupTarget != "" && r.Target != vr.params.BackupTarget {
		return r, status.Errorf(codes.InvalidArgument, "%s names target %q but %s names %q", ParamFromBackup, r.Target, ParamBackupTarget, vr.params.BackupTarget)
	}
	if r.Target == "" {
		r.Target = vr.params.BackupTarget
	}
	return r, nil
}
