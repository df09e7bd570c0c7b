package sanity

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
)

// TestGroupSpecsNotSkipped: csi-sanity skips its GroupController specs
// unless the plugin advertises GROUP_CONTROLLER_SERVICE and the group
// capability CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT (csi-test v5
// groupcontroller.go); this fails if either is dropped, so the specs run.
func TestGroupSpecsNotSkipped(t *testing.T) {
	testutil.RequireRoot(t)
	node := csitest.Start(t, "sanity-node", filepath.Join(testutil.LoopFS(t, "xfs", 1<<30), "pool"), nil)
	ctx := context.Background()
	pc, err := csi.NewIdentityClient(node.Conn).GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	svc := false
	for _, c := range pc.GetCapabilities() {
		svc = svc || c.GetService().GetType() == csi.PluginCapability_Service_GROUP_CONTROLLER_SERVICE
	}
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
