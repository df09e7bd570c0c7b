package main

import (
	"context"
	"fmt"
	"io"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
)

func (a *app) newCSIStageCmd(f *csiFlags) *cobra.Command {
	var staging string
	var caps capFlags
	cmd := &cobra.Command{
		Use:   "stage VOLUME_ID --staging-path DIR",
		Short: "Stage a volume: attach it and mount its filesystem (Node service)",
		Long: `NodeStageVolume: attach the volume to a loop device and, for a mount volume,
format it if blank and mount it at the staging path, as kubelet does once per
volume and node.`,
		Example: "  chainvolctl csi stage VOLUME_ID --staging-path /mnt/stage --fs-type ext4",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.idCall(f, func(ctx context.Context, c *csiClient, id string) (string, error) {
			vc, err := caps.capability()
			if err != nil {
				return "", err
			}
			_, err = c.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: id, StagingTargetPath: staging, VolumeCapability: vc})
			return "staged " + id + " at " + staging, explainCSI(err)
		}),
	}
	requiredFlag(cmd.Flags(), &staging, "staging-path", "staging directory")
	caps.add(cmd.Flags())
	return cmd
}

func (a *app) newCSIUnstageCmd(f *csiFlags) *cobra.Command {
	return a.newCSIUndoCmd(f, nodeUndo{use: "unstage VOLUME_ID --staging-path DIR",
		short: "Unstage a volume: unmount and detach it (Node service)",
		long:  "NodeUnstageVolume: unmount the staging path and detach the volume's loop device.",
		ex:    "  chainvolctl csi unstage VOLUME_ID --staging-path /mnt/stage",
		flag:  "staging-path", help: "staging directory", done: "unstaged ",
		call: func(ctx context.Context, c *csiClient, id, path string) error {
			_, err := c.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: path})
			return err
		}})
}

func (a *app) newCSIPublishCmd(f *csiFlags) *cobra.Command {
	var staging, targetPath string
	var readonly bool
	var caps capFlags
	cmd := &cobra.Command{
		Use:   "publish VOLUME_ID --staging-path DIR --target-path PATH",
		Short: "Publish a staged volume at a target path (Node service)",
		Long: `NodePublishVolume: bind-mount the staged filesystem at the target directory
(or the device at a target file with --block), read-only with --readonly, as
kubelet does for each pod.`,
		Example: "  chainvolctl csi publish VOLUME_ID --staging-path /mnt/stage --target-path /mnt/pod",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.idCall(f, func(ctx context.Context, c *csiClient, id string) (string, error) {
			vc, err := caps.capability()
			if err != nil {
				return "", err
			}
			_, err = c.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, StagingTargetPath: staging,
				TargetPath: targetPath, VolumeCapability: vc, Readonly: readonly})
			return "published " + id + " at " + targetPath, explainCSI(err)
		}),
	}
	fl := cmd.Flags()
	requiredFlag(fl, &staging, "staging-path", "staging directory the volume was staged at")
	requiredFlag(fl, &targetPath, "target-path", "where to publish the volume")
	fl.BoolVar(&readonly, "readonly", false, "publish read-only")
	caps.add(fl)
	return cmd
}

func (a *app) newCSIUnpublishCmd(f *csiFlags) *cobra.Command {
	return a.newCSIUndoCmd(f, nodeUndo{use: "unpublish VOLUME_ID --target-path PATH",
		short: "Unpublish a volume from a target path (Node service)",
		long:  "NodeUnpublishVolume: unmount the target path and remove it.",
		ex:    "  chainvolctl csi unpublish VOLUME_ID --target-path /mnt/pod",
		flag:  "target-path", help: "published path", done: "unpublished ",
		call: func(ctx context.Context, c *csiClient, id, path string) error {
			_, err := c.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: path})
			return err
		}})
}

// nodeUndo describes a node command that undoes a stage or a publish: one
// volume id, one required path flag, one call.
type nodeUndo struct {
	use, short, long, ex string
	flag, help, done     string
	call                 func(ctx context.Context, c *csiClient, id, path string) error
}

func (a *app) newCSIUndoCmd(f *csiFlags, u nodeUndo) *cobra.Command {
	var path string
	cmd := &cobra.Command{Use: u.use, Short: u.short, Long: u.long, Example: u.ex, Args: args(cobra.ExactArgs(1)),
		RunE: a.idCall(f, func(ctx context.Context, c *csiClient, id string) (string, error) {
			return u.done + id, explainCSI(u.call(ctx, c, id, path))
		}),
	}
	requiredFlag(cmd.Flags(), &path, u.flag, u.help)
	return cmd
}

func (a *app) newCSIStatsCmd(f *csiFlags) *cobra.Command {
	var volumePath string
	cmd := &cobra.Command{
		Use:     "stats VOLUME_ID --volume-path PATH",
		Short:   "Show a published volume's usage (Node service)",
		Long:    "NodeGetVolumeStats: bytes and inodes used and available.",
		Example: "  chainvolctl csi stats VOLUME_ID --volume-path /mnt/pod -o json",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.csiCall(f, func(ctx context.Context, cmd *cobra.Command, argv []string, c *csiClient) error {
			resp, err := c.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: argv[0], VolumePath: volumePath})
			if err != nil {
				return explainCSI(err)
			}
			return a.emitProto(cmd, resp, func(w io.Writer) error {
				tb := newTable(w, "UNIT", "TOTAL", "USED", "AVAILABLE")
				for _, u := range resp.GetUsage() {
					tb.row(u.GetUnit().String(), fmt.Sprint(u.GetTotal()), fmt.Sprint(u.GetUsed()), fmt.Sprint(u.GetAvailable()))
				}
				return tb.flush()
			})
		}),
	}
	requiredFlag(cmd.Flags(), &volumePath, "volume-path", "published or staged path of the volume")
	return cmd
}
