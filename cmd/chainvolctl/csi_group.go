package main

import (
	"context"
	"fmt"
	"io"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
)

func (a *app) newCSIGroupCmd(f *csiFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "group",
		Short: "Create, get and delete group snapshots (GroupController service)",
		Long: `GroupController calls. A group snapshot freezes every member volume (all on
the driver's node), reflinks them all and thaws; with --param backup=true
each member is then archived as the next backup of its own chain, the
manifests sharing the group id (restore all with fromBackup CHAIN@group:ID).`,
		Example: `  chainvolctl csi group create nightly --source VOL_A --source VOL_B --param backup=true --wait
  chainvolctl csi group delete GROUP_ID --snapshot SNAP_A --snapshot SNAP_B`,
		RunE: groupRunE,
	}
	cmd.AddCommand(a.newCSIGroupCreateCmd(f), a.newCSIGroupGetCmd(f), a.newCSIGroupDeleteCmd(f))
	return cmd
}

func (a *app) newCSIGroupCreateCmd(f *csiFlags) *cobra.Command {
	var sources, params []string
	var quiet bool
	var s secretFlags
	var w waitFlags
	cmd := &cobra.Command{
		Use:   "create NAME --source VOLUME_ID...",
		Short: "Snapshot volumes together, optionally archiving each as a backup",
		Long: `CreateVolumeGroupSnapshot with NAME (the idempotency key). With --wait the
call is repeated until the group is ready_to_use (every member archived).`,
		Example: "  chainvolctl csi group create g1 --source VOL_A --source VOL_B --param backup=true --wait -q",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error {
			p, err := keyValues("param", params)
			if err != nil {
				return err
			}
			secrets, err := s.load()
			if err != nil {
				return err
			}
			req := &csi.CreateVolumeGroupSnapshotRequest{Name: argv[0], SourceVolumeIds: sources, Parameters: p, Secrets: secrets}
			return f.call(cmd.Context(), func(ctx context.Context, c *csiClient) error {
				var resp *csi.CreateVolumeGroupSnapshotResponse
				err := w.retry(ctx, f, func(ctx context.Context) (bool, error) {
					var err error
					resp, err = csi.NewGroupControllerClient(c.conn).CreateVolumeGroupSnapshot(ctx, req)
					return resp.GetGroupSnapshot().GetReadyToUse(), err
				})
				if err != nil {
					return err
				}
				return a.emitGroup(cmd, resp.GetGroupSnapshot(), quiet)
			})
		}),
	}
	fl := cmd.Flags()
	fl.StringArrayVar(&sources, "source", nil, "id of a member volume (repeatable, required)")
	fl.StringArrayVar(&params, "param", nil, "parameter KEY=VALUE (backup=true, backupTarget=NAME); repeatable")
	fl.BoolVarP(&quiet, "quiet", "q", false, "print only the group snapshot id")
	s.add(fl)
	w.add(fl, "the group is ready_to_use")
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
		RunE: a.run(func(cmd *cobra.Command, argv []string) error {
			return f.groupCall(cmd.Context(), &s, func(ctx context.Context, g csi.GroupControllerClient, secrets map[string]string) error {
				resp, err := g.GetVolumeGroupSnapshot(ctx,
					&csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: argv[0], SnapshotIds: snaps, Secrets: secrets})
				if err != nil {
					return explainCSI(err)
				}
				return a.emitGroup(cmd, resp.GetGroupSnapshot(), false)
			})
		}),
	}
	cmd.Flags().StringArrayVar(&snaps, "snapshot", nil, "a member snapshot id (repeatable)")
	s.add(cmd.Flags())
	return cmd
}

func (a *app) newCSIGroupDeleteCmd(f *csiFlags) *cobra.Command {
	var snaps []string
	var s secretFlags
	cmd := &cobra.Command{
		Use:     "delete GROUP_ID",
		Short:   "Delete a group snapshot and its members (backups leave their chains)",
		Long:    "DeleteVolumeGroupSnapshot. An unknown group succeeds (CSI idempotency).",
		Example: "  chainvolctl csi group delete GROUP_ID --snapshot SNAP_A --snapshot SNAP_B",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error {
			return f.groupCall(cmd.Context(), &s, func(ctx context.Context, g csi.GroupControllerClient, secrets map[string]string) error {
				_, err := g.DeleteVolumeGroupSnapshot(ctx,
					&csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: argv[0], SnapshotIds: snaps, Secrets: secrets})
				if err != nil {
					return explainCSI(err)
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "deleted group snapshot %s\n", argv[0])
				return err
			})
		}),
	}
	cmd.Flags().StringArrayVar(&snaps, "snapshot", nil, "a member snapshot id (repeatable)")
	s.add(cmd.Flags())
	return cmd
}

// groupCall loads the secrets of s and runs do on the GroupController
// service of the driver at f, within f's timeout: what get and delete share.
func (f *csiFlags) groupCall(ctx context.Context, s *secretFlags,
	do func(ctx context.Context, g csi.GroupControllerClient, secrets map[string]string) error) error {
	secrets, err := s.load()
	if err != nil {
		return err
	}
	return f.call(ctx, func(ctx context.Context, c *csiClient) error {
		cctx, cancel := f.withTimeout(ctx)
		defer cancel()
		return do(cctx, csi.NewGroupControllerClient(c.conn), secrets)
	})
}

// emitGroup prints a group: its id alone with quiet, JSON with -o json,
// else a table of its members.
func (a *app) emitGroup(cmd *cobra.Command, g *csi.VolumeGroupSnapshot, quiet bool) error {
	if quiet {
		_, err := fmt.Fprintln(cmd.OutOrStdout(), g.GetGroupSnapshotId())
		return err
	}
	return a.emitProto(cmd, g, func(w io.Writer) error {
		fmt.Fprintf(w, "group %s ready=%v\n", g.GetGroupSnapshotId(), g.GetReadyToUse())
		return snapshotTable(w, g.GetSnapshots()...)
	})
}
