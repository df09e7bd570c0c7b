package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// TestVolumeNameChains: volumes without PVC metadata whose names used to
// map to one chain ("team-a/db" and "team-a:db" both to "team-a-db"; two
// 106-byte names to one truncation) each get a chain of their own, and
// fromBackup of each chain's @latest restores that volume's own bytes
// (issue 12, item 5).
func TestVolumeNameChains(t *testing.T) {
	s3 := startS3(t)
	n := startDriver(t, "node-a", s3.opts(s3.url("")))
	vees := strings.Repeat("v", 100)
	hashed := func(s string) string {
		h := sha256.Sum256([]byte(s))
		return "_volume-sha256/" + hex.EncodeToString(h[:])
	}
	const size = 64 * mib
	for i, tc := range []struct{ name, chain string }{
		{"team-a/db", "_volume/team-a_2fdb"},
		{"team-a:db", "_volume/team-a_3adb"},
		{vees + "-alpha", hashed(vees + "-alpha")},
		{vees + "-beta", hashed(vees + "-beta")},
	} {
		vol := createVolume(t, n.Ctrl, tc.name, size, blockCap(), nil)
		p := stagePublish(t, n.Node, vol.GetVolumeId(), blockCap())
		writeDevice(t, p.Path, uint64(100+i), []int64{0, 7 * mib}, int(mib))
		want := hashDevice(t, p.Path)
		unpublishUnstage(t, p)
		id := backup(t, n.Ctrl, vol.GetVolumeId(), "snap-"+itoa(i), "")
		if _, chain, _ := splitBackupID(t, id); chain != tc.chain {
			t.Fatalf("volume %.20q: backup %s in chain %q, want %q", tc.name, id, chain, tc.chain)
		}
		req := &csi.CreateVolumeRequest{Name: "copy-" + itoa(i), CapacityRange: &csi.CapacityRange{RequiredBytes: size},
			VolumeCapabilities: []*csi.VolumeCapability{blockCap()},
			Parameters:         map[string]string{"fromBackup": offsite + ":" + tc.chain + "@latest"}}
		v := restore(t, n.Ctrl, req)
		rp := stagePublish(t, n.Node, v.GetVolumeId(), blockCap())
		if got := hashDevice(t, rp.Path); got != want {
			t.Errorf("fromBackup %s@latest restored sha256 %x, want volume %.20q's %x", tc.chain, got, tc.name, want)
		}
		unpublishUnstage(t, rp)
		repo := openRepo(t, s3.url(""), s3.creds)
		if m := manifestOf(t, repo, id); !m.Full() {
			t.Errorf("first backup of volume %.20q is an incremental of %q: its chain is shared", tc.name, m.ParentID)
		}
	}
}
