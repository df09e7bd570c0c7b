package e2e

import (
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// TestParallelDeleteSnapshots: 16 backups of one volume, then three
// DeleteSnapshot calls of middle backups at the same time. All answer OK,
// every one of the 13 remaining backups restores its own bytes, a deleted
// one is NotFound-as-success on retry, and the volume's next backup works
// (issue 12, case 1: the chain used to break for good). The target is
// reached through a proxy adding 20 ms a request, as a remote S3 would, so
// that the deletes overlap.
func TestParallelDeleteSnapshots(t *testing.T) {
	s3 := startS3(t)
	p := startFaultProxy(t, s3.srv.Endpoint)
	n := startDriver(t, "node-a", s3.opts(s3.url(p.Addr)))
	const size = 32 * mib
	vol := createVolume(t, n.Ctrl, "vol", size, blockCap(), nil)
	var ids []string
	var want [][32]byte
	for i := range 16 {
		p := stagePublish(t, n.Node, vol.GetVolumeId(), blockCap())
		writeDevice(t, p.Path, uint64(300+i), []int64{int64(i%8) * 4 * mib}, int(mib))
		want = append(want, hashDevice(t, p.Path))
		unpublishUnstage(t, p)
		ids = append(ids, backup(t, n.Ctrl, vol.GetVolumeId(), "b"+itoa(i), ""))
	}
	p.latency.Store(int64(20 * time.Millisecond))
	del := []int{5, 8, 11}
	var wg sync.WaitGroup
	errs := make([]error, len(del))
	for k, i := range del {
		wg.Go(func() {
			_, errs[k] = n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: ids[i]})
		})
	}
	wg.Wait()
	p.latency.Store(0)
	for k, err := range errs {
		if err != nil {
			t.Fatalf("DeleteSnapshot %s: %v", ids[del[k]], err)
		}
	}
	gone := map[int]bool{5: true, 8: true, 11: true}
	repo := openRepo(t, s3.url(""), s3.creds)
	if _, err := repo.GC(rpcCtx(t), s3chain.GCOptions{}); err != nil {
		t.Fatalf("gc: %v", err)
	}
	for i, id := range ids {
		if gone[i] {
			if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: id}); err != nil {
				t.Errorf("DeleteSnapshot %s again: %v", id, err)
			}
			continue
		}
		v := restore(t, n.Ctrl, restoreReq("copy-"+itoa(i), id, size, blockCap()))
		rp := stagePublish(t, n.Node, v.GetVolumeId(), blockCap())
		if got := hashDevice(t, rp.Path); got != want[i] {
			t.Errorf("backup %d (%s) restored sha256 %x, want %x", i, id, got, want[i])
		}
		unpublishUnstage(t, rp)
		deleteVolume(t, n, v.GetVolumeId())
	}
	backup(t, n.Ctrl, vol.GetVolumeId(), "b16", "")
}

// TestRetentionRacingUpload: with b1 ready, backup s2 (parent b1) is held
// just before its manifest is written; b1 is deleted through
// DeleteSnapshot and gc runs meanwhile. s2 becomes ready, verifies and
// restores its own bytes: gc left b1's blocks that s2 uses (issue 12,
// case 2: s2 used to report ready with a missing parent and gc took them).
func TestRetentionRacingUpload(t *testing.T) {
	s3 := startS3(t)
	p := startFaultProxy(t, s3.srv.Endpoint)
	n := startDriver(t, "node-a", s3.opts(s3.url(p.Addr)))
	const size = 64 * mib
	vol := createVolume(t, n.Ctrl, "vol", size, blockCap(), nil)
	pub := stagePublish(t, n.Node, vol.GetVolumeId(), blockCap())
	writeDevice(t, pub.Path, 401, []int64{0, 16 * mib, 40 * mib}, int(4*mib))
	b1 := backup(t, n.Ctrl, vol.GetVolumeId(), "b1", "")
	writeDevice(t, pub.Path, 402, []int64{16 * mib}, int(mib))
	want := hashDevice(t, pub.Path)
	unpublishUnstage(t, pub)

	p.mu.Lock()
	p.holdOnly = func(r *http.Request) bool {
		// The manifest's commit, not a state record (FORMAT.md §7.5): b1's
		// delete writes one.
		return strings.Contains(r.URL.Path, "/manifests/") && strings.HasSuffix(r.URL.Path, ".json") && r.Method == http.MethodPut
	}
	p.mu.Unlock()
	p.holdWrites()
	req := &csi.CreateSnapshotRequest{Name: "s2", SourceVolumeId: vol.GetVolumeId(), Parameters: backupParams("")}
	if _, err := n.Ctrl.CreateSnapshot(rpcCtx(t), req); err != nil {
		t.Fatalf("CreateSnapshot s2: %v", err)
	}
	p.waitHeld()
	if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: b1}); err != nil {
		t.Fatalf("DeleteSnapshot b1 while s2 uploads: %v", err)
	}
	repo := openRepo(t, s3.url(""), s3.creds)
	st, err := repo.GC(rpcCtx(t), s3chain.GCOptions{})
	if err != nil || st.DeletedBlocks != 0 || st.SkippedChains != 1 {
		t.Fatalf("gc while s2 uploads: %+v, %v; want its chain skipped", st, err)
	}
	p.release()
	s2 := backupReq(t, n.Ctrl, req)
	if st, err := repo.GC(rpcCtx(t), s3chain.GCOptions{}); err != nil || st.SkippedChains != 0 {
		t.Fatalf("gc after s2: %+v, %v", st, err)
	}
	_, chain, id := splitBackupID(t, s2)
	if err := repo.Verify(rpcCtx(t), chain, id, true); err != nil {
		t.Fatalf("verify s2 after b1 was deleted and gc ran: %v", err)
	}
	v := restore(t, n.Ctrl, restoreReq("copy", s2, size, blockCap()))
	rp := stagePublish(t, n.Node, v.GetVolumeId(), blockCap())
	if got := hashDevice(t, rp.Path); got != want {
		t.Errorf("s2 restored sha256 %x, want %x", got, want)
	}
	unpublishUnstage(t, rp)
}
