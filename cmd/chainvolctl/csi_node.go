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
	var staging string
	cmd := &cobra.Command{
		Use:     "unstage VOLUME_ID --staging-path DIR",
		Short:   "Unstage a volume: unmount and detach it (Node service)",
		Long:    "NodeUnstageVolume: unmount the staging path and detach the volume's loop device.",
		Example: "  chainvolctl csi unstage VOLUME_ID --staging-path /mnt/stage",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.idCall(f, func(ctx context.Context, c *csiClient, id string) (string, error) {
			_, err := c.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging})
			return "unstaged " + id, explainCSI(err)
		}),
	}
	requiredFlag(cmd.Flags(), &staging, "staging-path", "staging directory")
	return cmd
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
	var targetPath string
	cmd := &cobra.Command{
		Use:     "unpublish VOLUME_ID --target-path PATH",
		Short:   "Unpublish a volume from a target path (Node service)",
		Long:    "NodeUnpublishVolume: unmount the target path and remove it.",
		Example: "  chainvolctl csi unpublish VOLUME_ID --target-path /mnt/pod",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.idCall(f, func(ctx context.Context, c *csiClient, id string) (string, error) {
			_, err := c.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: targetPath})
			return "unpublished " + id, explainCSI(err)
		}),
	}
	requiredFlag(cmd.Flags(), &targetPath, "target-path", "published path")
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
