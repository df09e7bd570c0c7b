package driver

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// topo is the requirement a CO with topology (external-provisioner with
// --strict-topology, the snapshotter's class allowedTopologies) sends for
// nodes: each requisite and preferred.
func topo(nodes ...string) *csi.TopologyRequirement {
	var ts []*csi.Topology
	for _, n := range nodes {
		ts = append(ts, &csi.Topology{Segments: map[string]string{TopologyKey: n}})
	}
	return &csi.TopologyRequirement{Requisite: ts, Preferred: ts}
}

// wantTopology fails unless got is exactly node's segment, or empty when
// node is "" (usable from every topology).
func wantTopology(t *testing.T, what string, got []*csi.Topology, node string) {
	t.Helper()
	if node == "" {
		if len(got) != 0 {
			t.Errorf("%s: accessible_topology %v, want none (restorable anywhere)", what, got)
		}
		return
	}
	if len(got) != 1 || len(got[0].GetSegments()) != 1 || got[0].GetSegments()[TopologyKey] != node {
		t.Errorf("%s: accessible_topology %v, want [{%s: %s}]", what, got, TopologyKey, node)
	}
}

// topoClients are the gRPC clients of a driver served for e (serveConn).
type topoClients struct {
	id   csi.IdentityClient
	ctrl csi.ControllerClient
	grp  csi.GroupControllerClient
}

func serveTopo(e *nodeEnv) topoClients {
	conn := e.serveConn()
	return topoClients{csi.NewIdentityClient(conn), csi.NewControllerClient(conn), csi.NewGroupControllerClient(conn)}
}

// newVolume creates an empty block volume called name over c.
func (c topoClients) newVolume(t *testing.T, name string, src *csi.VolumeContentSource, tr *csi.TopologyRequirement) (*csi.Volume, error) {
	t.Helper()
	resp, err := c.ctrl.CreateVolume(context.Background(), &csi.CreateVolumeRequest{
		Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: volSize},
		VolumeCapabilities: []*csi.VolumeCapability{blockCap(snw)}, VolumeContentSource: src, AccessibilityRequirements: tr,
	})
	return resp.GetVolume(), err
}

// snapshot calls CreateSnapshot (a backup when backup), until a backup is
// ready; it returns the last answer.
func (c topoClients) snapshot(t *testing.T, name, vol string, backup bool, tr *csi.TopologyRequirement) (*csi.Snapshot, error) {
	t.Helper()
	req := &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: vol, AccessibilityRequirements: tr}
	if backup {
		req.Parameters = map[string]string{"backup": "true"}
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := c.ctrl.CreateSnapshot(context.Background(), req)
		if err != nil || resp.GetSnapshot().GetReadyToUse() {
			return resp.GetSnapshot(), err
		}
		if time.Now().After(deadline) {
			t.Fatalf("backup %s not ready", name)
		}
	}
}

func snapSource(id string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: id}}}
}

func volSource(id string) *csi.VolumeContentSource {
	return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: id}}}
}

// TestSnapshotTopology (issue 31, CSI 1.13 "Snapshot".accessible_topology):
// the driver advertises SNAPSHOT_ACCESSIBILITY_CONSTRAINTS; a local
// snapshot reports its node's segment, the key volumes have, in
// CreateSnapshot, GetSnapshot, ListSnapshots (all, by id, by source) and
// as a group's member; a backup reports none (restorable anywhere), also
// as a group's member. A requisite topology that excludes the node is
// ResourceExhausted for a local snapshot (CSI spec "CreateSnapshot Errors")
// and met by a backup.
func TestSnapshotTopology(t *testing.T) {
	e := newNodeEnv(t)
	c := serveTopo(e)
	ctx := e.ctx
	caps, err := c.id.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	mustOK(t, err)
	if !slices.ContainsFunc(caps.GetCapabilities(), func(pc *csi.PluginCapability) bool {
		return pc.GetService().GetType() == csi.PluginCapability_Service_SNAPSHOT_ACCESSIBILITY_CONSTRAINTS
	}) {
		t.Fatalf("plugin capabilities %v lack SNAPSHOT_ACCESSIBILITY_CONSTRAINTS", caps.GetCapabilities())
	}
	v, err := c.newVolume(t, "vol-a", nil, topo("node-1"))
	mustOK(t, err)
	wantTopology(t, "volume", v.GetAccessibleTopology(), "node-1")
	w, err := c.newVolume(t, "vol-b", nil, nil)
	mustOK(t, err)

	_, err = c.snapshot(t, "local-elsewhere", v.GetVolumeId(), false, topo("node-2"))
	wantCode(t, err, codes.ResourceExhausted, "node-1", TopologyKey)
	local, err := c.snapshot(t, "local", v.GetVolumeId(), false, topo("node-2", "node-1"))
	mustOK(t, err)
	wantTopology(t, "CreateSnapshot local", local.GetAccessibleTopology(), "node-1")
	again, err := c.snapshot(t, "local", v.GetVolumeId(), false, nil)
	mustOK(t, err)
	wantTopology(t, "CreateSnapshot local, retried", again.GetAccessibleTopology(), "node-1")
	backup, err := c.snapshot(t, "backup", v.GetVolumeId(), true, topo("node-2"))
	mustOK(t, err)
	wantTopology(t, "CreateSnapshot backup", backup.GetAccessibleTopology(), "")

	want := map[string]string{local.GetSnapshotId(): "node-1", backup.GetSnapshotId(): ""}
	for id, node := range want {
		g, err := c.ctrl.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: id})
		mustOK(t, err)
		wantTopology(t, "GetSnapshot "+id, g.GetSnapshot().GetAccessibleTopology(), node)
		l, err := c.ctrl.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: id})
		mustOK(t, err)
		if len(l.GetEntries()) != 1 {
			t.Fatalf("ListSnapshots %s: %d entries", id, len(l.GetEntries()))
		}
		wantTopology(t, "ListSnapshots by id "+id, l.GetEntries()[0].GetSnapshot().GetAccessibleTopology(), node)
	}
	for _, req := range []*csi.ListSnapshotsRequest{{}, {SourceVolumeId: v.GetVolumeId()}} {
		l, err := c.ctrl.ListSnapshots(ctx, req)
		mustOK(t, err)
		seen := 0
		for _, en := range l.GetEntries() {
			if node, ok := want[en.GetSnapshot().GetSnapshotId()]; ok {
				seen++
				wantTopology(t, "ListSnapshots "+en.GetSnapshot().GetSnapshotId(), en.GetSnapshot().GetAccessibleTopology(), node)
			}
		}
		if seen != len(want) {
			t.Errorf("ListSnapshots %v: %d of the %d snapshots", req, seen, len(want))
		}
	}

	ids := []string{v.GetVolumeId(), w.GetVolumeId()}
	for _, g := range []struct {
		name, node string
		params     map[string]string
	}{{"grp-local", "node-1", nil}, {"grp-backup", "", map[string]string{"backup": "true"}}} {
		gs := c.readyGroup(t, &csi.CreateVolumeGroupSnapshotRequest{Name: g.name, SourceVolumeIds: ids, Parameters: g.params})
		var members []string
		for _, s := range gs.GetSnapshots() {
			members = append(members, s.GetSnapshotId())
			wantTopology(t, g.name+" member "+s.GetSnapshotId(), s.GetAccessibleTopology(), g.node)
		}
		got, err := c.grp.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: gs.GetGroupSnapshotId(), SnapshotIds: members})
		mustOK(t, err)
		for _, s := range got.GetGroupSnapshot().GetSnapshots() {
			wantTopology(t, "GetVolumeGroupSnapshot "+g.name+" member "+s.GetSnapshotId(), s.GetAccessibleTopology(), g.node)
		}
	}
}

// readyGroup calls CreateVolumeGroupSnapshot with req until the group is
// ready, and returns it.
func (c topoClients) readyGroup(t *testing.T, req *csi.CreateVolumeGroupSnapshotRequest) *csi.VolumeGroupSnapshot {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		resp, err := c.grp.CreateVolumeGroupSnapshot(context.Background(), req)
		mustOK(t, err)
		if resp.GetGroupSnapshot().GetReadyToUse() {
			return resp.GetGroupSnapshot()
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s not ready", req.GetName())
		}
	}
}

// TestCrossNodeSources (issue 31): two nodes, each with its own pool,
// sharing a backup target. A clone of node-a's volume or a restore of its
// local snapshot asked of node-b (requisite node-b, as external-provisioner
// sends for the node the scheduler picked) is ResourceExhausted, so the
// provisioner gives the claim back to the scheduler; asked of node-a with
// requisite node-b it is ResourceExhausted too; on node-a with node-a it
// is made there. Without topology (csi-sanity) a source this pool lacks
// stays NotFound. A backup made on node-a restores on node-b.
func TestCrossNodeSources(t *testing.T) {
	shared := t.TempDir()
	extra := func(o *Options) { o.BackupTargets = []string{"shared=file://" + shared} }
	a, b := serveTopo(newNodeEnvOn(t, "node-a", extra)), serveTopo(newNodeEnvOn(t, "node-b", extra))
	src, err := a.newVolume(t, "src", nil, topo("node-a"))
	mustOK(t, err)
	snap, err := a.snapshot(t, "snap", src.GetVolumeId(), false, nil)
	mustOK(t, err)
	backup, err := a.snapshot(t, "backup", src.GetVolumeId(), true, nil)
	mustOK(t, err)
	sources := map[string]*csi.VolumeContentSource{"clone": volSource(src.GetVolumeId()), "snapshot restore": snapSource(snap.GetSnapshotId())}
	for what, s := range sources {
		_, err := b.newVolume(t, "on-b", s, topo("node-b"))
		wantCode(t, err, codes.ResourceExhausted, "node-b", TopologyKey)
		_, err = b.newVolume(t, "on-b", s, &csi.TopologyRequirement{Preferred: topo("node-b").GetPreferred()})
		wantCode(t, err, codes.ResourceExhausted, "node-b")
		_, err = b.newVolume(t, "on-b", s, nil)
		wantCode(t, err, codes.NotFound)
		_, err = a.newVolume(t, "on-a", s, topo("node-b"))
		wantCode(t, err, codes.ResourceExhausted, "node-a")
		v, err := a.newVolume(t, "on-a-"+what, s, topo("node-a"))
		if err != nil {
			t.Fatalf("%s on the source's node: %v", what, err)
		}
		wantTopology(t, what+" on node-a", v.GetAccessibleTopology(), "node-a")
	}
	v := b.restored(t, "restored-on-b", backup.GetSnapshotId(), topo("node-b"))
	wantTopology(t, "backup restored on node-b", v.GetAccessibleTopology(), "node-b")
}

// restored restores backup id as a volume called name, retrying while the
// restore is in progress (Aborted).
func (c topoClients) restored(t *testing.T, name, id string, tr *csi.TopologyRequirement) *csi.Volume {
	t.Helper()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		v, err := c.newVolume(t, name, snapSource(id), tr)
		if status.Code(err) != codes.Aborted {
			mustOK(t, err)
			return v
		}
		if time.Now().After(deadline) {
			t.Fatalf("restore %s of %s: still %v", name, id, err)
		}
	}
}
