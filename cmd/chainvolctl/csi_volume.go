package main

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/proto"

	"github.com/chainvol/chainvol/pkg/topology"
)

func (a *app) newCSIVolumeCmd(f *csiFlags) *cobra.Command {
	return parentCmd(&cobra.Command{
		Use:   "volume",
		Short: "Create, delete, list and expand volumes (Controller service)",
		Long:  "Controller calls on volumes: CreateVolume, DeleteVolume, ListVolumes and ControllerExpandVolume (with NodeExpandVolume).",
		Example: `  chainvolctl csi volume create data --size 1Gi --fs-type ext4 -q
  chainvolctl csi volume list
  chainvolctl csi volume delete VOLUME_ID`,
	}, a.newCSIVolumeCreateCmd(f), a.newCSIVolumeDeleteCmd(f), a.newCSIVolumeListCmd(f), a.newCSIVolumeExpandCmd(f))
}

// volumeCreateFlags are the options of "csi volume create".
type volumeCreateFlags struct {
	size, fromSnapshot, fromVolume string
	nodeTopology                   bool
	caps                           capFlags
	csiCreateFlags
}

func (a *app) newCSIVolumeCreateCmd(f *csiFlags) *cobra.Command {
	var v volumeCreateFlags
	cmd := &cobra.Command{
		Use:   "create NAME --size SIZE",
		Short: "Create a volume, empty or from a snapshot, volume or backup",
		Long: `CreateVolume with NAME (the idempotency key, like a PV name). Parameters are
StorageClass parameters: fromBackup=[TARGET:]CHAIN@BACKUP restores a backup,
backupTarget=NAME picks its target, csi.storage.k8s.io/pvc/name and
csi.storage.k8s.io/pvc/namespace are the metadata the provisioner adds.
A restore from a backup can take minutes: the driver answers Aborted with
its progress meanwhile; --wait retries until the volume is ready.`,
		Example: `  chainvolctl csi volume create data --size 1Gi --fs-type ext4 \
      --param csi.storage.k8s.io/pvc/name=data --param csi.storage.k8s.io/pvc/namespace=demo
  chainvolctl csi volume create data2 --size 1Gi --param fromBackup=demo/data@latest --wait -q`,
		Args: args(cobra.ExactArgs(1)),
		RunE: a.csiSession(f, func(ctx context.Context, cmd *cobra.Command, argv []string, c *csiClient) error {
			return a.volumeCreate(ctx, cmd, f, c, argv[0], &v)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&v.size, "size", "1Gi", "capacity, e.g. 1Gi")
	fl.StringVar(&v.fromSnapshot, "from-snapshot", "", "snapshot id to clone or restore")
	fl.StringVar(&v.fromVolume, "from-volume", "", "volume id to clone")
	fl.BoolVar(&v.nodeTopology, "node-topology", false, "require the topology of the node serving the socket (NodeGetInfo)")
	v.caps.add(fl)
	v.csiCreateFlags.add(fl, "parameter KEY=VALUE; repeatable", "volume", "the volume is ready")
	cmd.MarkFlagsMutuallyExclusive("from-snapshot", "from-volume")
	return cmd
}

func (a *app) volumeCreate(ctx context.Context, cmd *cobra.Command, f *csiFlags, c *csiClient, name string, v *volumeCreateFlags) error {
	size, err := parseSize("size", v.size)
	if err != nil {
		return err
	}
	vc, err := v.caps.capability()
	if err != nil {
		return err
	}
	params, secrets, err := v.maps()
	if err != nil {
		return err
	}
	req := &csi.CreateVolumeRequest{Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{vc}, Parameters: params, Secrets: secrets}
	switch {
	case v.fromSnapshot != "":
		req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: v.fromSnapshot}}}
	case v.fromVolume != "":
		req.VolumeContentSource = &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: v.fromVolume}}}
	}
	if v.nodeTopology {
		if req.AccessibilityRequirements, err = nodeTopology(ctx, f, c); err != nil {
			return err
		}
	}
	resp, err := createWait(ctx, &v.wait, f, c.ctrl.CreateVolume, req, func(*csi.CreateVolumeResponse) bool { return true })
	if err != nil {
		return err
	}
	vol := resp.GetVolume()
	return a.emitObject(cmd, v.quiet, vol.GetVolumeId(), vol, func(w io.Writer) error { return volumeTable(w, vol) })
}

// nodeTopology asks the node for its topology and requires it: chainvol
// volumes are created on the node that serves the call, or nowhere.
func nodeTopology(ctx context.Context, f *csiFlags, c *csiClient) (*csi.TopologyRequirement, error) {
	cctx, cancel := f.withTimeout(ctx)
	defer cancel()
	info, err := c.node.NodeGetInfo(cctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		return nil, explainCSI(err)
	}
	t := info.GetAccessibleTopology()
	if t == nil {
		t = &csi.Topology{Segments: map[string]string{topology.Key: info.GetNodeId()}}
	}
	return &csi.TopologyRequirement{Requisite: []*csi.Topology{t}, Preferred: []*csi.Topology{t}}, nil
}

// emitProto prints m as JSON with -o json, else calls tableFn.
func (a *app) emitProto(cmd *cobra.Command, m proto.Message, tableFn func(io.Writer) error) error {
	if a.output == "json" {
		return a.printProto(cmd, m)
	}
	return tableFn(cmd.OutOrStdout())
}

func volumeTable(w io.Writer, vols ...*csi.Volume) error {
	tb := newTable(w, "VOLUME_ID", "CAPACITY", "SOURCE", "TOPOLOGY")
	for _, v := range vols {
		src := "-"
		if s := v.GetContentSource(); s.GetSnapshot() != nil {
			src = "snapshot " + s.GetSnapshot().GetSnapshotId()
		} else if s.GetVolume() != nil {
			src = "volume " + s.GetVolume().GetVolumeId()
		}
		topo := "-"
		for _, t := range v.GetAccessibleTopology() {
			topo = fmt.Sprint(sortedKV(t.GetSegments()))
		}
		tb.row(v.GetVolumeId(), bytesStr(v.GetCapacityBytes()), src, topo)
	}
	return tb.flush()
}

func sortedKV(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
