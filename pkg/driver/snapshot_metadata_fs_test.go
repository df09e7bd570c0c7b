package driver

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// TestSnapshotMetadataFilesystems (issue 28): a local snapshot of an ext4
// and of an XFS volume, formatted and filled by NodeStageVolume and file
// writes, answers allocated ranges that cover every non-zero 4 KiB block
// of its image and at most 1.5× the non-zero bytes, and a delta after
// more files that covers every changed byte and at most 2× them; the
// snapshot clones as a Block volume holding its exact bytes.
func TestSnapshotMetadataFilesystems(t *testing.T) {
	e := startMetaEnv(t, nil, "")
	node := csi.NewNodeClient(e.conn)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 28))
	const size = 512 << 20
	for _, fs := range []string{"ext4", "xfs"} {
		t.Run(fs, func(t *testing.T) {
			resp, err := e.ctl.CreateVolume(e.ctx, &csi.CreateVolumeRequest{Name: "pvc-" + fs, CapacityRange: &csi.CapacityRange{RequiredBytes: size},
				VolumeCapabilities: []*csi.VolumeCapability{mountCap(fs, snw)}})
			mustOK(t, err)
			vol := resp.GetVolume().GetVolumeId()
			staging := filepath.Join(t.TempDir(), "staging")
			fill := func(n int) {
				_, err := node.NodeStageVolume(e.ctx, &csi.NodeStageVolumeRequest{VolumeId: vol, StagingTargetPath: staging, VolumeCapability: mountCap(fs, snw)})
				mustOK(t, err)
				for range n {
					buf := make([]byte, 4096*(1+rng.IntN(64)))
					for j := range buf {
						buf[j] = byte(rng.UintN(255) + 1)
					}
					mustOK(t, os.WriteFile(filepath.Join(staging, randName(rng)), buf, 0o600))
				}
				_, err = node.NodeUnstageVolume(e.ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol, StagingTargetPath: staging})
				mustOK(t, err)
			}
			fill(40)
			s1 := e.snapshot(fs+"-1", vol, false)
			fill(20)
			s2 := e.snapshot(fs+"-2", vol, false)
			img1, img2 := e.data(s1), e.data(s2)
			a, err := e.allocated(s1, 0, 0)
			mustOK(t, err)
			need, got := checkCovers(t, "allocated", a.ranges, size, nonZero(img1))
			t.Logf("allocated: %d ranges, %d bytes for %d non-zero", len(a.ranges), got, need)
			if float64(got) > 1.5*float64(need) {
				t.Errorf("allocated covers %d bytes for %d non-zero bytes (> 1.5×)", got, need)
			}
			// The filesystem snapshot as a Block volume: its exact bytes.
			clone, err := e.ctl.CreateVolume(e.ctx, &csi.CreateVolumeRequest{Name: "block-of-" + fs, VolumeCapabilities: []*csi.VolumeCapability{blockCap(snw)},
				CapacityRange:       &csi.CapacityRange{RequiredBytes: size},
				VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: s2}}}})
			mustOK(t, err)
			if got := e.data(clone.GetVolume().GetVolumeId()); !bytes.Equal(got, img2) {
				t.Errorf("block volume from %s snapshot %s (%d bytes) does not hold its %d bytes", fs, s2, len(got), len(img2))
			}
			d, err := e.delta(s1, s2, 0, 0)
			mustOK(t, err)
			need, got = checkCovers(t, "delta", d.ranges, size, changed(img1, img2))
			t.Logf("delta: %d ranges, %d bytes for %d changed", len(d.ranges), got, need)
			if need == 0 || float64(got) > 2*float64(need) {
				t.Errorf("delta covers %d bytes for %d changed bytes (> 2×)", got, need)
			}
		})
	}
}

func randName(rng *rand.Rand) string {
	b := make([]byte, 12)
	for i := range b {
		b[i] = byte('a' + rng.IntN(26))
	}
	return string(b)
}
