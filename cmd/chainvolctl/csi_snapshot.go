package main

import (
	"context"
	"fmt"
	"io"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
)

func (a *app) newCSISnapshotCmd(f *csiFlags) *cobra.Command {
	return parentCmd(&cobra.Command{
		Use:   "snapshot",
		Short: "Create, delete and list snapshots and backups (Controller service)",
		Long: `Controller calls on snapshots. With --param backup=true a snapshot is also
archived to a backup target as the next backup of the volume's chain; its id
then starts with "backup:".`,
		Example: `  chainvolctl csi snapshot create snap1 --source VOLUME_ID --param backup=true --wait -q
  chainvolctl csi snapshot list --source VOLUME_ID`,
	}, a.newCSISnapshotCreateCmd(f), a.newCSISnapshotDeleteCmd(f), a.newCSISnapshotListCmd(f))
}

// snapshotParamUsage describes --param of the snapshot and group creates.
const snapshotParamUsage = "parameter KEY=VALUE (backup=true, backupTarget=NAME); repeatable"

func (a *app) newCSISnapshotCreateCmd(f *csiFlags) *cobra.Command {
	var source string
	var r csiCreateFlags
	cmd := &cobra.Command{
		Use:   "create NAME --source VOLUME_ID",
		Short: "Snapshot a volume, optionally archiving it as a backup",
		Long: `CreateSnapshot with NAME (the idempotency key). The filesystem is frozen
while the snapshot is taken if the volume is staged. With --wait the call is
repeated, as the external-snapshotter does, until the snapshot is
ready_to_use (a backup is ready once it is archived).`,
		Example: "  chainvolctl csi snapshot create nightly --source VOLUME_ID --param backup=true --wait",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.csiSession(f, func(ctx context.Context, cmd *cobra.Command, argv []string, c *csiClient) error {
			p, secrets, err := r.maps()
			if err != nil {
				return err
			}
			req := &csi.CreateSnapshotRequest{Name: argv[0], SourceVolumeId: source, Parameters: p, Secrets: secrets}
			resp, err := createWait(ctx, &r.wait, f, c.ctrl.CreateSnapshot, req, func(r *csi.CreateSnapshotResponse) bool { return r.GetSnapshot().GetReadyToUse() })
			if err != nil {
				return err
			}
			sn := resp.GetSnapshot()
			return a.emitObject(cmd, r.quiet, sn.GetSnapshotId(), sn, func(w io.Writer) error { return snapshotTable(w, sn) })
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&source, "source", "", "id of the volume to snapshot (required)")
	r.add(fl, snapshotParamUsage, "snapshot", "the snapshot is ready_to_use")
	_ = cmd.MarkFlagRequired("source")
	return cmd
}

func (a *app) newCSISnapshotDeleteCmd(f *csiFlags) *cobra.Command {
	return a.newCSIDeleteCmd(f, deleteSpec{
		noun:    "snapshot",
		arg:     "SNAPSHOT_ID",
		short:   "Delete a snapshot (or remove a backup from its chain)",
		long:    "DeleteSnapshot. An unknown id succeeds (CSI idempotency). A backup id removes that backup from its chain.",
		example: "  chainvolctl csi snapshot delete SNAPSHOT_ID",
		call: func(ctx context.Context, c *csiClient, id string, secrets map[string]string) error {
			_, err := c.ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: id, Secrets: secrets})
			return err
		},
	})
}

func (a *app) newCSISnapshotListCmd(f *csiFlags) *cobra.Command {
	var source, id string
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List snapshots and backups",
		Long:    "ListSnapshots, following next_token; --source or --id filter as the CSI request does.",
		Example: "  chainvolctl csi snapshot list --source VOLUME_ID -o json",
		Args:    args(cobra.NoArgs),
		RunE: a.csiSession(f, func(ctx context.Context, cmd *cobra.Command, _ []string, c *csiClient) error {
			entries, err := listAll(ctx, f, func(ctx context.Context, token string) (page[*csi.ListSnapshotsResponse_Entry], error) {
				resp, err := c.ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{StartingToken: token, SourceVolumeId: source, SnapshotId: id})
				return page[*csi.ListSnapshotsResponse_Entry]{resp.GetEntries(), resp.GetNextToken()}, err
			})
			if err != nil {
				return err
			}
			return a.emitProto(cmd, &csi.ListSnapshotsResponse{Entries: entries}, func(w io.Writer) error {
				return snapshotTable(w, each(entries, (*csi.ListSnapshotsResponse_Entry).GetSnapshot)...)
			})
		}),
	}
	cmd.Flags().StringVar(&source, "source", "", "only snapshots of this volume id")
	cmd.Flags().StringVar(&id, "id", "", "only this snapshot id")
	return cmd
}

func snapshotTable(w io.Writer, snaps ...*csi.Snapshot) error {
	tb := newTable(w, "SNAPSHOT_ID", "SOURCE", "SIZE", "CREATED", "READY")
	for _, s := range snaps {
		tb.row(s.GetSnapshotId(), s.GetSourceVolumeId(), bytesStr(s.GetSizeBytes()),
			timeStr(s.GetCreationTime().AsTime()), fmt.Sprint(s.GetReadyToUse()))
	}
	return tb.flush()
}
