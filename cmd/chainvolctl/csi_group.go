package main

import (
	"context"
	"fmt"
	"io"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

func (a *app) newCSIGroupCmd(f *csiFlags) *cobra.Command {
	return parentCmd(&cobra.Command{
		Use:   "group",
		Short: "Create, get and delete group snapshots (GroupController service)",
		Long: `GroupController calls. A group snapshot freezes every member volume (all on
the driver's node), reflinks them all and thaws; with --param backup=true
each member is then archived as the next backup of its own chain, the
manifests sharing the group id (restore all with fromBackup CHAIN@group:ID).`,
		Example: `  chainvolctl csi group create nightly --source VOL_A --source VOL_B --param backup=true --wait
  chainvolctl csi group delete GROUP_ID --snapshot SNAP_A --snapshot SNAP_B`,
	}, a.newCSIGroupCreateCmd(f), a.newCSIGroupGetCmd(f), a.newCSIGroupDeleteCmd(f))
}

func (a *app) newCSIGroupCreateCmd(f *csiFlags) *cobra.Command {
	var sources []string
	var r csiCreateFlags
	cmd := &cobra.Command{
		Use:   "create NAME --source VOLUME_ID...",
		Short: "Snapshot volumes together, optionally archiving each as a backup",
		Long: `CreateVolumeGroupSnapshot with NAME (the idempotency key). With --wait the
call is repeated until the group is ready_to_use (every member archived).`,
		Example: "  chainvolctl csi group create g1 --source VOL_A --source VOL_B --param backup=true --wait -q",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.csiSession(f, func(ctx context.Context, cmd *cobra.Command, argv []string, c *csiClient) error {
			p, secrets, err := r.maps()
			if err != nil {
				return err
			}
			req := &csi.CreateVolumeGroupSnapshotRequest{Name: argv[0], SourceVolumeIds: sources, Parameters: p, Secrets: secrets}
			resp, err := createWait(ctx, &r.wait, f, c.group.CreateVolumeGroupSnapshot, req,
				func(r *csi.CreateVolumeGroupSnapshotResponse) bool { return r.GetGroupSnapshot().GetReadyToUse() })
			if err != nil {
				return err
			}
			return a.emitGroup(cmd, resp.GetGroupSnapshot(), r.quiet)
		}),
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&sources, "source", nil, "id of a member volume (repeatable, required)")
	r.add(fl, snapshotParamUsage, "group snapshot", "the group is ready_to_use")
	_ = cmd.MarkFlagRequired("source")
	return cmd
}

func (a *app) newCSIGroupGetCmd(f *csiFlags) *cobra.Command {
	var snaps []string
	var s secretFlags
	cmd := &cobra.Command{
		Use:     "get GROUP_ID",
		Short:   "Show a group snapshot and its members",
		Long:    "GetVolumeGroupSnapshot; --snapshot names the members as the CO passes them (needed for backups made on another node).",
		Example: "  chainvolctl csi group get GROUP_ID -o json",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.csiCall(f, func(ctx context.Context, cmd *cobra.Command, argv []string, c *csiClient) error {
			secrets, err := s.load()
			if err != nil {
				return err
			}
			resp, err := c.group.GetVolumeGroupSnapshot(ctx,
				&csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: argv[0], SnapshotIds: snaps, Secrets: secrets})
			if err != nil {
				return explainCSI(err)
			}
			return a.emitGroup(cmd, resp.GetGroupSnapshot(), false)
		}),
	}
	cmd.Flags().StringArrayVar(&snaps, "snapshot", nil, "a member snapshot id (repeatable)")
	s.add(cmd.Flags())
	return cmd
}

func (a *app) newCSIGroupDeleteCmd(f *csiFlags) *cobra.Command {
	var snaps []string
	return a.newCSIDeleteCmd(f, deleteSpec{
		noun:    "group snapshot",
		arg:     "GROUP_ID",
		short:   "Delete a group snapshot and its members (backups leave their chains)",
		long:    "DeleteVolumeGroupSnapshot. An unknown group succeeds (CSI idempotency).",
		example: "  chainvolctl csi group delete GROUP_ID --snapshot SNAP_A --snapshot SNAP_B",
		flags: func(fs *pflag.FlagSet) {
			fs.StringArrayVar(&snaps, "snapshot", nil, "a member snapshot id (repeatable)")
		},
		call: func(ctx context.Context, c *csiClient, id string, secrets map[string]string) error {
			_, err := c.group.DeleteVolumeGroupSnapshot(ctx,
				&csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: id, SnapshotIds: snaps, Secrets: secrets})
			return err
		},
	})
}

// emitGroup prints a group: its id alone with quiet, JSON with -o json,
// else a table of its members.
func (a *app) emitGroup(cmd *cobra.Command, g *csi.VolumeGroupSnapshot, quiet bool) error {
	return a.emitObject(cmd, quiet, g.GetGroupSnapshotId(), g, func(w io.Writer) error {
		fmt.Fprintf(w, "group %s ready=%v\n", g.GetGroupSnapshotId(), g.GetReadyToUse())
		return snapshotTable(w, g.GetSnapshots()...)
	})
}
