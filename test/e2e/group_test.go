package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// createGroup calls CreateVolumeGroupSnapshot with the same name until the
// group is ready (backups upload in the background).
func createGroup(t *testing.T, g csi.GroupControllerClient, req *csi.CreateVolumeGroupSnapshotRequest) *csi.VolumeGroupSnapshot {
	t.Helper()
	deadline := time.Now().Add(retryFor)
	for {
		resp, err := g.CreateVolumeGroupSnapshot(rpcCtx(t), req)
		if err != nil {
			t.Fatalf("CreateVolumeGroupSnapshot %s: %v", req.GetName(), err)
		}
		if resp.GetGroupSnapshot().GetReadyToUse() {
			return resp.GetGroupSnapshot()
		}
		if time.Now().After(deadline) {
			t.Fatalf("group %s not ready after %v", req.GetName(), retryFor)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestGroupBackup: three mounted members of a StatefulSet are backed up as
// one group (frozen together): each member is the next backup of its own
// chain, the manifests share the group id and the backup time; after a
// later individual round, "${pvc.namespace}/${pvc.name}@group:ID" restores
// each member's group data; a group naming a volume of another node is
// refused naming it; deleting the group deletes its backups.
func TestGroupBackup(t *testing.T) {
	s3 := startS3(t)
	n := startDriver(t, "node-a", s3.opts(s3.url("")))
	gc := csi.NewGroupControllerClient(n.Conn)
	var vols []string
	var pubs []*published
	var hashes []string
	for i := range 3 {
		v := createVolume(t, n.Ctrl, fmt.Sprintf("pvc-g%d", i), volSize, mountCap("ext4"), pvcParams("shop", fmt.Sprintf("data-db-%d", i)))
		vols = append(vols, v.GetVolumeId())
		p := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
		pubs = append(pubs, p)
		writeTree(t, p.Path, uint64(100+i), 2*mib)
		hashes = append(hashes, fmt.Sprint(hashTree(t, p.Path)))
	}
	req := &csi.CreateVolumeGroupSnapshotRequest{Name: "groupsnapshot-1", SourceVolumeIds: vols,
		Parameters: map[string]string{"backup": "true"}}
	g := createGroup(t, gc, req)
	if len(g.GetSnapshots()) != 3 || !strings.HasPrefix(g.GetGroupSnapshotId(), "g-") {
		t.Fatalf("group %+v: want 3 members and a g- id", g)
	}
	repo := openRepo(t, s3.url(""), s3.creds)
	var backupTime string
	for _, s := range g.GetSnapshots() {
		if s.GetGroupSnapshotId() != g.GetGroupSnapshotId() {
			t.Errorf("member %s: group id %q", s.GetSnapshotId(), s.GetGroupSnapshotId())
		}
		m := manifestOf(t, repo, s.GetSnapshotId())
		if m.GroupID != g.GetGroupSnapshotId() || m.Member != m.Chain {
			t.Errorf("manifest %s/%s: groupId %q member %q", m.Chain, m.ID, m.GroupID, m.Member)
		}
		if backupTime == "" {
			backupTime = m.ID
		} else if m.ID != backupTime {
			t.Errorf("members have backup ids %s and %s: want one time", backupTime, m.ID)
		}
	}
	again, err := gc.CreateVolumeGroupSnapshot(rpcCtx(t), req)
	if err != nil || again.GetGroupSnapshot().GetGroupSnapshotId() != g.GetGroupSnapshotId() {
		t.Fatalf("retry of the same group: %v, %v", again, err)
	}
	var ids []string
	for _, s := range g.GetSnapshots() {
		ids = append(ids, s.GetSnapshotId())
	}
	got, err := gc.GetVolumeGroupSnapshot(rpcCtx(t), &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids})
	if err != nil || !got.GetGroupSnapshot().GetReadyToUse() || len(got.GetGroupSnapshot().GetSnapshots()) != 3 {
		t.Fatalf("GetVolumeGroupSnapshot: %v, %v", got, err)
	}

	time.Sleep(1100 * time.Millisecond)
	for i, p := range pubs { // a later round, one backup at a time
		writeTree(t, p.Path, uint64(200+i), 2*mib)
		backup(t, n.Ctrl, vols[i], fmt.Sprintf("snap-later-%d", i), "")
		unpublishUnstage(t, p)
	}
	for i := range 3 {
		params := pvcParams("shop", fmt.Sprintf("data-db-%d", i))
		params["fromBackup"] = "offsite:${pvc.namespace}/${pvc.name}@group:" + g.GetGroupSnapshotId()
		v := restore(t, n.Ctrl, &csi.CreateVolumeRequest{Name: fmt.Sprintf("pvc-gr%d", i),
			VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
			CapacityRange:      &csi.CapacityRange{RequiredBytes: volSize}, Parameters: params})
		rp := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
		if fmt.Sprint(hashTree(t, rp.Path)) != hashes[i] {
			t.Errorf("member %d restored through @group: differs from its group data", i)
		}
		unpublishUnstage(t, rp)
	}

	absent := "vol-00000000000000000abc"
	_, err = gc.CreateVolumeGroupSnapshot(rpcCtx(t), &csi.CreateVolumeGroupSnapshotRequest{Name: "groupsnapshot-2",
		SourceVolumeIds: []string{vols[0], absent}, Parameters: map[string]string{"backup": "true"}})
	wantCode(t, "a member on another node", err, codes.FailedPrecondition, absent, "node-a")

	if _, err := gc.DeleteVolumeGroupSnapshot(rpcCtx(t), &csi.DeleteVolumeGroupSnapshotRequest{
		GroupSnapshotId: g.GetGroupSnapshotId(), SnapshotIds: ids}); err != nil {
		t.Fatalf("DeleteVolumeGroupSnapshot: %v", err)
	}
	for _, id := range ids {
		_, err := n.Ctrl.GetSnapshot(rpcCtx(t), &csi.GetSnapshotRequest{SnapshotId: id})
		wantCode(t, "a member of a deleted group", err, codes.NotFound)
	}
}

// TestGroupLocal: a group of local snapshots (no backup parameter) is
// found by its id alone, a member restores like any snapshot, and the
// group's deletion removes its members.
func TestGroupLocal(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	gc := csi.NewGroupControllerClient(n.Conn)
	var vols []string
	var want string
	for i := range 2 {
		v := createVolume(t, n.Ctrl, fmt.Sprintf("pvc-l%d", i), volSize, mountCap("ext4"), nil)
		vols = append(vols, v.GetVolumeId())
		p := stagePublish(t, n.Node, v.GetVolumeId(), mountCap("ext4"))
		writeTree(t, p.Path, uint64(300+i), mib)
		if i == 1 {
			want = fmt.Sprint(hashTree(t, p.Path))
		}
		defer unpublishUnstage(t, p)
	}
	g := createGroup(t, gc, &csi.CreateVolumeGroupSnapshotRequest{Name: "local-group", SourceVolumeIds: []string{vols[1], vols[0]}})
	got, err := gc.GetVolumeGroupSnapshot(rpcCtx(t), &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId()})
	if err != nil || len(got.GetGroupSnapshot().GetSnapshots()) != 2 {
		t.Fatalf("GetVolumeGroupSnapshot by id alone: %v, %v", got, err)
	}
	var member string
	for _, s := range g.GetSnapshots() {
		if s.GetSourceVolumeId() == vols[1] {
			member = s.GetSnapshotId()
		}
	}
	r, err := n.Ctrl.CreateVolume(rpcCtx(t), &csi.CreateVolumeRequest{Name: "pvc-from-member", VolumeCapabilities: []*csi.VolumeCapability{mountCap("ext4")},
		CapacityRange:       &csi.CapacityRange{RequiredBytes: volSize},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: member}}}})
	if err != nil {
		t.Fatalf("volume from a group member: %v", err)
	}
	rp := stagePublish(t, n.Node, r.GetVolume().GetVolumeId(), mountCap("ext4"))
	if fmt.Sprint(hashTree(t, rp.Path)) != want {
		t.Errorf("volume from group member differs from its source at group time")
	}
	unpublishUnstage(t, rp)
	if _, err := gc.DeleteVolumeGroupSnapshot(rpcCtx(t), &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId()}); err != nil {
		t.Fatal(err)
	}
	_, err = gc.GetVolumeGroupSnapshot(rpcCtx(t), &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId()})
	wantCode(t, "a deleted group", err, codes.NotFound)
}
