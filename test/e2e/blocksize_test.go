package e2e

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// TestBlockSizeParameter: a VolumeSnapshotClass's blockSize sets the block
// size of a new chain (the manifest says 1 MiB, the restore is
// byte-identical); a later backup asking another size is InvalidArgument
// naming the chain's, before any snapshot is taken; one asking none or
// the chain's own goes on in the chain (issue 16).
func TestBlockSizeParameter(t *testing.T) {
	s3 := startS3(t)
	url := s3.url("")
	n := startDriver(t, "node-a", s3.opts(url))
	repo := openRepo(t, url, s3.creds)
	const size = 128 * mib

	vol := createVolume(t, n.Ctrl, "bs-src", size, blockCap(), nil)
	want := writeVolume(t, n, vol.GetVolumeId(), 7)
	params := func(bs string) map[string]string {
		p := backupParams(offsite)
		if bs != "" {
			p["blockSize"] = bs
		}
		return p
	}
	id1 := backupReq(t, n.Ctrl, &csi.CreateSnapshotRequest{Name: "bs-b1", SourceVolumeId: vol.GetVolumeId(), Parameters: params("1Mi")})
	if m := manifestOf(t, repo, id1); m.BlockSize != 1<<20 {
		t.Fatalf("backup with blockSize 1Mi has block size %d", m.BlockSize)
	}
	_, err := n.Ctrl.CreateSnapshot(rpcCtx(t), &csi.CreateSnapshotRequest{Name: "bs-b2", SourceVolumeId: vol.GetVolumeId(), Parameters: params("4Mi")})
	wantCode(t, "backup asking 4Mi of a 1Mi chain", err, codes.InvalidArgument, "1048576", "1Mi")
	if lvols, _ := n.Pool.List(rpcCtx(t), "snapshot"); len(lvols) != 1 {
		t.Errorf("a refused backup left %d snapshots in the pool, want only the first backup's", len(lvols))
	}
	for i, bs := range []string{"", "1Mi"} {
		id := backupReq(t, n.Ctrl, &csi.CreateSnapshotRequest{Name: "bs-b" + itoa(3+i), SourceVolumeId: vol.GetVolumeId(), Parameters: params(bs)})
		if m := manifestOf(t, repo, id); m.BlockSize != 1<<20 {
			t.Errorf("backup with blockSize %q of a 1Mi chain has block size %d", bs, m.BlockSize)
		}
	}
	v := restore(t, n.Ctrl, restoreReq("bs-copy", id1, size, blockCap()))
	rp := stagePublish(t, n.Node, v.GetVolumeId(), blockCap())
	if got := hashDevice(t, rp.Path); got != want {
		t.Errorf("restore of a 1 MiB-block backup: sha256 %x, want %x", got, want)
	}
	unpublishUnstage(t, rp)
}
