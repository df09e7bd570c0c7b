package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/pkg/driver"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/volume"
)

// TestBackupNameRecords: the record of a backup snapshot's name
// (STATE/snapshots/, kept after the sweep deleted the backup's local
// snapshot) answers only while that backup exists, and only for its
// source volume (CSI spec "CreateSnapshot": the same name for another
// source is AlreadyExists); DeleteSnapshot removes it, so the name may
// then take a new backup; a stale record left by a crash (one naming a
// backup that no longer exists or never did) costs a lookup and then a new
// backup, never an answer of an id that names nothing.
func TestBackupNameRecords(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	volA := createVolume(t, n.Ctrl, "names-a", 64*mib, blockCap(), nil)
	volB := createVolume(t, n.Ctrl, "names-b", 64*mib, blockCap(), nil)
	writeVolume(t, n, volA.GetVolumeId(), 11)
	id1 := backup(t, n.Ctrl, volA.GetVolumeId(), "names-b1", "")
	id2 := backup(t, n.Ctrl, volA.GetVolumeId(), "names-b2", "") // sweeps names-b1's base

	// The swept name over another volume: the old code took a backup of B.
	_, err := n.Ctrl.CreateSnapshot(rpcCtx(t), &csi.CreateSnapshotRequest{Name: "names-b1",
		SourceVolumeId: volB.GetVolumeId(), Parameters: backupParams("")})
	wantCode(t, "CreateSnapshot names-b1 of another volume", err, codes.AlreadyExists)

	// Deleted: the name's record goes with the backup.
	if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: id1}); err != nil {
		t.Fatalf("DeleteSnapshot %s: %v", id1, err)
	}
	if id := backup(t, n.Ctrl, volA.GetVolumeId(), "names-b1", ""); id == id1 {
		t.Errorf("CreateSnapshot names-b1 after DeleteSnapshot answered the deleted backup %s", id1)
	} else {
		id1 = id
	}

	// A stale record, as a crash between DeleteSnapshot's delete of the
	// backup and its removal of the record leaves: it names a backup the
	// target does not hold.
	n.Stop()
	ref, err := volume.ParseBackupID(id2)
	if err != nil {
		t.Fatal(err)
	}
	ref.Backup = s3chain.NewBackupID(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC))
	never := volume.BackupID(ref)
	writeNameRecord(t, n.Opts.StateDir, volume.BackupName{Name: "names-crash", SnapshotID: never, SourceVolumeID: volA.GetVolumeId()})
	n = csitest.Start(t, "node-a", n.Opts.PoolDir, func(o *driver.Options) { o.StateDir = n.Opts.StateDir })
	id3 := backup(t, n.Ctrl, volA.GetVolumeId(), "names-crash", "")
	if id3 == never {
		t.Errorf("CreateSnapshot names-crash answered %s, a backup never taken", never)
	}

	for _, id := range []string{id1, id2, id3} {
		if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: id}); err != nil {
			t.Fatalf("DeleteSnapshot %s: %v", id, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(n.Opts.StateDir, "snapshots", "*")); len(left) > 0 {
		t.Errorf("name records left after deleting every backup: %v", left)
	}
}

// writeNameRecord writes a backup name record as pkg/volume does
// (snapshots/SHA256(NAME).json), to simulate what a crash left.
func writeNameRecord(t *testing.T, state string, r volume.BackupName) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256([]byte(r.Name))
	p := filepath.Join(state, "snapshots", hex.EncodeToString(h[:])+".json")
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestBackupNameRecordLost: a backup whose name record is missing while
// its local snapshot exists (a crash between the lvol and the record, or
// a snapshot of an older driver) gets it before the sweep may delete the
// lvol, so a retry after the sweep still answers the same id.
func TestBackupNameRecordLost(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	vol := createVolume(t, n.Ctrl, "lost", 64*mib, blockCap(), nil)
	writeVolume(t, n, vol.GetVolumeId(), 12)
	req := &csi.CreateSnapshotRequest{Name: "lost-b1", SourceVolumeId: vol.GetVolumeId(), Parameters: backupParams("")}
	first, err := n.Ctrl.CreateSnapshot(rpcCtx(t), req)
	if err != nil {
		t.Fatalf("CreateSnapshot %s: %v", req.Name, err)
	}
	n.Stop()
	recs, _ := filepath.Glob(filepath.Join(n.Opts.StateDir, "snapshots", "*.json"))
	if len(recs) != 1 {
		t.Fatalf("name records after the first answer: %v, want one", recs)
	}
	if err := os.Remove(recs[0]); err != nil {
		t.Fatal(err)
	}
	n = csitest.Start(t, "node-a", n.Opts.PoolDir, func(o *driver.Options) { o.StateDir = n.Opts.StateDir })
	id := backupReq(t, n.Ctrl, req)
	if id != first.GetSnapshot().GetSnapshotId() {
		t.Fatalf("CreateSnapshot %s after the restart: %s, first %s", req.Name, id, first.GetSnapshot().GetSnapshotId())
	}
	backup(t, n.Ctrl, vol.GetVolumeId(), "lost-b2", "") // sweeps lost-b1's base
	if got := backupReq(t, n.Ctrl, req); got != id {
		t.Errorf("CreateSnapshot %s retried after the sweep: %s, first %s", req.Name, got, id)
	}
}

// TestGroupBackupRetryAfterSweepSameID is TestBackupRetryAfterSweepSameID
// for a group of backups (CSI spec "CreateVolumeGroupSnapshot": the same
// name gives the same group while it exists): once later backups of the
// members' volumes superseded the group's bases, or the volumes were
// deleted, the retry answers the same group id and member ids, ready. The
// same name over other volumes is AlreadyExists; after
// DeleteVolumeGroupSnapshot the name may take a new group.
func TestGroupBackupRetryAfterSweepSameID(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	gc := csi.NewGroupControllerClient(n.Conn)
	var vols []string
	for i := range 2 {
		v := createVolume(t, n.Ctrl, "gsweep-"+itoa(i), 64*mib, blockCap(), nil)
		writeVolume(t, n, v.GetVolumeId(), uint64(20+i))
		vols = append(vols, v.GetVolumeId())
	}
	req := &csi.CreateVolumeGroupSnapshotRequest{Name: "gsweep-g1", SourceVolumeIds: vols, Parameters: backupParams("")}
	g := createGroup(t, gc, req)
	var later []string
	for i, v := range vols {
		later = append(later, backup(t, n.Ctrl, v, "gsweep-later-"+itoa(i), "")) // supersedes the member's base
	}
	same := func(what string) {
		t.Helper()
		resp, err := gc.CreateVolumeGroupSnapshot(rpcCtx(t), req)
		got := resp.GetGroupSnapshot()
		if err != nil || got.GetGroupSnapshotId() != g.GetGroupSnapshotId() || !got.GetReadyToUse() || len(got.GetSnapshots()) != len(vols) {
			t.Fatalf("CreateVolumeGroupSnapshot %s retried %s: %v, %v; want group %s ready", req.Name, what, got, err, g.GetGroupSnapshotId())
		}
		want := map[string]string{}
		for _, s := range g.GetSnapshots() {
			want[s.GetSnapshotId()] = s.GetSourceVolumeId()
		}
		for _, s := range got.GetSnapshots() {
			if src, ok := want[s.GetSnapshotId()]; !ok || src != s.GetSourceVolumeId() || !s.GetReadyToUse() || s.GetGroupSnapshotId() != g.GetGroupSnapshotId() {
				t.Errorf("retried %s: member %v, want one of %v, ready, of group %s", what, s, want, g.GetGroupSnapshotId())
			}
		}
	}
	same("after the sweep")
	other := proto.Clone(req).(*csi.CreateVolumeGroupSnapshotRequest)
	other.SourceVolumeIds = vols[:1]
	_, err := gc.CreateVolumeGroupSnapshot(rpcCtx(t), other)
	wantCode(t, "CreateVolumeGroupSnapshot of the same name over other volumes", err, codes.AlreadyExists)
	for _, v := range vols {
		deleteVolume(t, n, v)
	}
	same("after DeleteVolume")
	if _, err := gc.DeleteVolumeGroupSnapshot(rpcCtx(t), &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshotId(),
		SnapshotIds: memberIDs(g)}); err != nil {
		t.Fatalf("DeleteVolumeGroupSnapshot: %v", err)
	}
	_, err = gc.CreateVolumeGroupSnapshot(rpcCtx(t), req)
	wantCode(t, "CreateVolumeGroupSnapshot after the group and its volumes were deleted", err, codes.NotFound)
	for _, id := range later {
		if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: id}); err != nil {
			t.Fatalf("DeleteSnapshot %s: %v", id, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(n.Opts.StateDir, "*", "*.json")); len(left) > 0 {
		t.Errorf("records left after deleting every backup: %v", left)
	}
}

// memberIDs are the snapshot ids of a group's members.
func memberIDs(g *csi.VolumeGroupSnapshot) []string {
	var ids []string
	for _, s := range g.GetSnapshots() {
		ids = append(ids, s.GetSnapshotId())
	}
	return ids
}
