package sanity

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
)

// TestGroupSpecsNotSkipped: csi-sanity skips its GroupController specs
// unless the plugin advertises GROUP_CONTROLLER_SERVICE and the group
// capability CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT (csi-test v5
// groupcontroller.go); this fails if either is dropped, so the specs run.
func TestGroupSpecsNotSkipped(t *testing.T) {
	node, services := startNode(t)
	ctx := context.Background()
	svc := services[csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE]
	gc, err := csi.NewGroupControllerClient(node.Conn).GroupControllerGetCapabilities(ctx, &csi.GroupControllerGetCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	rpc := false
	for _, c := range gc.GetCapabilities() {
		rpc = rpc || c.GetRpc().GetType() == csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT
	}
	if !svc || !rpc {
		t.Fatalf("GROUP_CONTROLLER_SERVICE advertised %v, CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT %v: csi-sanity would skip its group specs", svc, rpc)
	}
}

// TestSnapshotTopologySpec (issue 31) makes the check of csi-sanity
// v5.6.0's "should succeed when creating a snapshot with accessibility
// requirements" (brokenTopologySpec, skipped for local snapshots) with
// proto.Equal: the plugin advertises SNAPSHOT_ACCESSIBILITY_CONSTRAINTS
// (else the spec would be skipped), and a local snapshot of a volume made
// for the node's topology, asked for with that topology as requisite and
// preferred, reports exactly the node's topology.
func TestSnapshotTopologySpec(t *testing.T) {
	node, services := startNode(t)
	ctx := context.Background()
	ni, err := node.Node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !services[csi.PluginCapability_Service_SNAPSHOT_ACCESSIBILITY_CONSTRAINTS] || ni.GetAccessibleTopology() == nil {
		t.Fatalf("SNAPSHOT_ACCESSIBILITY_CONSTRAINTS advertised %v, node topology %v: csi-sanity would skip its snapshot topology spec",
			services[csi.PluginCapability_Service_SNAPSHOT_ACCESSIBILITY_CONSTRAINTS], ni.GetAccessibleTopology())
	}
	here := []*csi.Topology{ni.GetAccessibleTopology()}
	vol, err := node.Ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "topology-volume",
		CapacityRange: &csi.CapacityRange{RequiredBytes: 64 << 20}, AccessibilityRequirements: &csi.TopologyRequirement{Requisite: here},
		VolumeCapabilities: []*csi.VolumeCapability{{AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := node.Ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "topology-snapshot", SourceVolumeId: vol.GetVolume().GetVolumeId(),
		AccessibilityRequirements: &csi.TopologyRequirement{Requisite: here, Preferred: here}})
	if err != nil {
		t.Fatal(err)
	}
	got := snap.GetSnapshot().GetAccessibleTopology()
	if len(got) != 1 || !proto.Equal(got[0], ni.GetAccessibleTopology()) {
		t.Fatalf("local snapshot's accessible_topology %v, want the node's %v", got, ni.GetAccessibleTopology())
	}
}

// startNode starts a driver on a fresh 1 GiB pool and returns it with the
// plugin services it advertises (GetPluginCapabilities).
func startNode(t *testing.T) (*csitest.Node, map[csi.PluginCapability_Service_Type]bool) {
	t.Helper()
	testutil.RequireRoot(t)
	node := csitest.Start(t, "sanity-node", filepath.Join(testutil.LoopFS(t, "xfs", 1<<30), "pool"), nil)
	pc, err := csi.NewIdentityClient(node.Conn).GetPluginCapabilities(context.Background(), &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	services := map[csi.PluginCapability_Service_Type]bool{}
	for _, c := range pc.GetCapabilities() {
		services[c.GetService().GetType()] = true
	}
	return node, services
}
