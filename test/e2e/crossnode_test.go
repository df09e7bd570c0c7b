package e2e

import (
	"testing"
)

// TestCrossInstance: a second driver on another node with its own pool,
// pointed at the same S3 target, restores a backup the first made from
// nothing but the backup's snapshot id.
func TestCrossInstance(t *testing.T) {
	s3 := startS3(t)
	url := s3.url("")
	a := startDriver(t, "node-a", s3.opts(url))
	b := startDriver(t, "node-b", s3.opts(url))
	vol := createVolume(t, a.Ctrl, "shared-src", volSize, mountCap("ext4"), nil)
	p := stagePublish(t, a.Node, vol.GetVolumeId(), mountCap("ext4"))
	writeTree(t, p.Path, 5, 24*mib)
	want := hashTree(t, p.Path)
	id := backup(t, a.Ctrl, vol.GetVolumeId(), "shared-b1", "")
	unpublishUnstage(t, p)

	v := restore(t, b.Ctrl, restoreReq("on-b", id, volSize, mountCap("")))
	checkRestoredVolume(t, "node-b", v, id, "ext4")
	rp := stagePublish(t, b.Node, v.GetVolumeId(), mountCap(""))
	sameTree(t, "restore on node-b", rp.Path, want)
	unpublishUnstage(t, rp)
}
