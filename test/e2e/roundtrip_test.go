package e2e

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/topology"
)

// TestRoundTrip: a volume with files is backed up in full to S3, about 1%
// of its files change, an incremental backup uploads only about the
// change; both backups restore to exactly the files of their time, on the
// node, with the source's filesystem type. Deleting the first backup
// leaves the second restorable.
func TestRoundTrip(t *testing.T) {
	testutil.RequireRoot(t)
	for _, fsType := range []string{"ext4", "xfs"} {
		t.Run(fsType, func(t *testing.T) { roundTrip(t, fsType) })
	}
}

// metadataBlocks is how many blocks of filesystem metadata (superblocks,
// bitmaps, inode tables, journal) a small change may touch besides data.
const metadataBlocks = 6

func roundTrip(t *testing.T, fsType string) {
	s3 := startS3(t)
	url := s3.url("")
	n := startDriver(t, "node-a", s3.opts(url))
	name := "rt-" + fsType
	vol := createVolume(t, n.Ctrl, name, volSize, mountCap(fsType), nil)
	p := stagePublish(t, n.Node, vol.GetVolumeId(), mountCap(fsType))
	writeTree(t, p.Path, 1, 160*mib)
	before := hashTree(t, p.Path)
	full := backup(t, n.Ctrl, vol.GetVolumeId(), name+"-b1", "")
	files, changed := changeTree(t, p.Path, 2, 1)
	after := hashTree(t, p.Path)
	incr := backup(t, n.Ctrl, vol.GetVolumeId(), name+"-b2", offsite)
	unpublishUnstage(t, p)
	if tgt, chain, _ := splitBackupID(t, full); tgt != offsite || chain != "_volume/"+name {
		t.Fatalf("backup id %s: want target %s and chain _volume/%s (the volume's name)", full, offsite, name)
	}

	repo := openRepo(t, url, s3.creds)
	mf, mi := manifestOf(t, repo, full), manifestOf(t, repo, incr)
	t.Logf("full %s: data %d B stored %d B; incremental %s: data %d B stored %d B; %d files changed, %d B written",
		mf.ID, mf.DataBytes, mf.StoredBytes, mi.ID, mi.DataBytes, mi.StoredBytes, files, changed)
	if !mf.Full() || mi.ParentID != mf.ID {
		t.Errorf("chain: full parent %q, incremental parent %q; want \"\" and %q", mf.ParentID, mi.ParentID, mf.ID)
	}
	if mf.FSType != fsType {
		t.Errorf("full backup's manifest fsType %q, want %q", mf.FSType, fsType)
	}
	if mf.DataBytes < 150*mib {
		t.Errorf("full backup has %d data bytes, want at least the 160 MiB written", mf.DataBytes)
	}
	// A change costs whole blocks (4 MiB): one per changed file plus a few
	// for the filesystem's metadata and journal, never the whole volume.
	if limit := int64(files+metadataBlocks) * mf.BlockSize; mi.DataBytes > limit || mi.DataBytes > mf.DataBytes/4 {
		t.Errorf("incremental uploaded %d data bytes for %d changed files: more than %d blocks of %d B or a quarter of the full's %d",
			mi.DataBytes, files, files+metadataBlocks, mf.BlockSize, mf.DataBytes)
	}
	if mi.StoredBytes > mf.StoredBytes/4 {
		t.Errorf("incremental stored %d bytes, more than a quarter of the full's %d", mi.StoredBytes, mf.StoredBytes)
	}

	for i, c := range []struct {
		id   string
		want tree
	}{{full, before}, {incr, after}} {
		rname := name + "-r" + itoa(i+1)
		v := restore(t, n.Ctrl, restoreReq(rname, c.id, volSize, mountCap("")))
		checkRestoredVolume(t, n.Opts.NodeID, v, c.id, fsType)
		rp := stagePublish(t, n.Node, v.GetVolumeId(), mountCap(""))
		sameTree(t, "restore of "+c.id, rp.Path, c.want)
		unpublishUnstage(t, rp)
	}

	// Deleting the first backup keeps the second restorable.
	if _, err := n.Ctrl.DeleteSnapshot(rpcCtx(t), &csi.DeleteSnapshotRequest{SnapshotId: full}); err != nil {
		t.Fatalf("DeleteSnapshot %s: %v", full, err)
	}
	_, err := n.Ctrl.CreateVolume(rpcCtx(t), restoreReq(name+"-gone", full, volSize, mountCap("")))
	wantCode(t, "restore of the deleted backup", err, codes.NotFound)
	v := restore(t, n.Ctrl, restoreReq(name+"-r2-again", incr, volSize, mountCap("")))
	rp := stagePublish(t, n.Node, v.GetVolumeId(), mountCap(""))
	sameTree(t, "restore of "+incr+" after deleting "+full, rp.Path, after)
	unpublishUnstage(t, rp)
}

// checkRestoredVolume checks what CreateVolume says of a restored volume:
// its filesystem, origin, topology and echoed content source.
func checkRestoredVolume(t *testing.T, nodeID string, v *csi.Volume, snapID, fsType string) {
	t.Helper()
	if got := v.GetVolumeContext()["fsType"]; got != fsType {
		t.Errorf("restored volume_context fsType %q, want %q", got, fsType)
	}
	if got, want := v.GetVolumeContext()["restoredFrom"], snapID[len("backup:"):]; got != want {
		t.Errorf("restored volume_context restoredFrom %q, want %q", got, want)
	}
	top := v.GetAccessibleTopology()
	if len(top) != 1 || top[0].GetSegments()[topology.Key] != nodeID || len(top[0].GetSegments()) != 1 {
		t.Errorf("accessible_topology %v, want only %s=%s", top, topology.Key, nodeID)
	}
	if got := v.GetContentSource().GetSnapshot().GetSnapshotId(); got != snapID {
		t.Errorf("content_source snapshot %q, want %q", got, snapID)
	}
}
