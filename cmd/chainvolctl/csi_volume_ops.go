package main

import (
	"context"
	"fmt"
	"io"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
)

func (a *app) newCSIVolumeDeleteCmd(f *csiFlags) *cobra.Command {
	return a.newCSIDeleteCmd(f, deleteSpec{
		noun:    "volume",
		arg:     "VOLUME_ID",
		short:   "Delete a volume",
		long:    "DeleteVolume. An unknown id succeeds (CSI idempotency); a volume still staged or published is refused by the driver.",
		example: "  chainvolctl csi volume delete VOLUME_ID",
		call: func(ctx context.Context, c *csiClient, id string, secrets map[string]string) error {
			_, err := c.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id, Secrets: secrets})
			return err
		},
	})
}

func (a *app) newCSIVolumeListCmd(f *csiFlags) *cobra.Command {
	return &cobra.Command{
		Use:     "list",
		Short:   "List the node's volumes",
		Long:    "ListVolumes, following next_token until every page is read.",
		Example: "  chainvolctl csi volume list -o json",
		Args:    args(cobra.NoArgs),
		RunE: a.csiSession(f, func(ctx context.Context, cmd *cobra.Command, _ []string, c *csiClient) error {
			entries, err := listAll(ctx, f, func(ctx context.Context, token string) (page[*csi.ListVolumesResponse_Entry], error) {
				resp, err := c.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: token})
				return page[*csi.ListVolumesResponse_Entry]{resp.GetEntries(), resp.GetNextToken()}, err
			})
			if err != nil {
				return err
			}
			return a.emitProto(cmd, &csi.ListVolumesResponse{Entries: entries}, func(w io.Writer) error {
				return volumeTable(w, each(entries, (*csi.ListVolumesResponse_Entry).GetVolume)...)
			})
		}),
	}
}

func (a *app) newCSIVolumeExpandCmd(f *csiFlags) *cobra.Command {
	var size, volumePath, stagingPath string
	cmd := &cobra.Command{
		Use:   "expand VOLUME_ID --size SIZE [--volume-path PATH]",
		Short: "Grow a volume (and its filesystem, with --volume-path)",
		Long: `ControllerExpandVolume grows the volume; with --volume-path (a published
path) NodeExpandVolume then grows the loop device and filesystem online.`,
		Example: "  chainvolctl csi volume expand VOLUME_ID --size 2Gi --volume-path /mnt/pub --staging-path /mnt/stage",
		Args:    args(cobra.ExactArgs(1)),
		RunE: a.csiCall(f, func(ctx context.Context, cmd *cobra.Command, argv []string, c *csiClient) error {
			n, err := parseSize("size", size)
			if err != nil {
				return err
			}
			cr := &csi.CapacityRange{RequiredBytes: n}
			resp, err := c.ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: argv[0], CapacityRange: cr})
			if err != nil {
				return explainCSI(err)
			}
			got := resp.GetCapacityBytes()
			if volumePath != "" && resp.GetNodeExpansionRequired() {
				nresp, err := c.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: argv[0],
					VolumePath: volumePath, StagingTargetPath: stagingPath, CapacityRange: cr})
				if err != nil {
					return explainCSI(err)
				}
				got = nresp.GetCapacityBytes()
			}
			fmt.Fprintf(cmd.OutOrStdout(), "volume %s is now %s (node expansion required: %v)\n", argv[0], bytesStr(got), resp.GetNodeExpansionRequired() && volumePath == "")
			return nil
		}),
	}
	fl := cmd.Flags()
	requiredFlag(fl, &size, "size", "new capacity, e.g. 2Gi")
	fl.StringVar(&volumePath, "volume-path", "", "published path: also grow the filesystem (NodeExpandVolume)")
	fl.StringVar(&stagingPath, "staging-path", "", "staging path, passed to NodeExpandVolume")
	return cmd
}
