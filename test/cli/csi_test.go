package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
)

// TestCSIClient drives a real driver over its socket with "chainvolctl csi":
// info, a volume on the node's topology, stage/publish/stats, a local
// snapshot, listings parsed back, and the teardown.
func TestCSIClient(t *testing.T) {
	pool := testutil.LoopFS(t, "xfs", 1<<30)
	n := csitest.Start(t, "cli-node", pool, nil)
	dir := t.TempDir()
	c := &ctl{t: t}
	csi := func(args ...string) []string { return append([]string{"csi", "--endpoint", n.Endpoint}, args...) }

	info := decode[struct {
		NodeID   string            `json:"nodeId"`
		Topology map[string]string `json:"topology"`
		Ready    bool              `json:"ready"`
		Plugin   []string          `json:"pluginCapabilities"`
	}](t, c.ok(csi("info", "-o", "json")...))
	if info.NodeID != "cli-node" || !info.Ready || len(info.Topology) == 0 {
		t.Fatalf("csi info = %+v", info)
	}
	// Issue 20: expansion was read through the service getter: UNKNOWN.
	if !slices.Contains(info.Plugin, "VOLUME_EXPANSION_ONLINE") || slices.Contains(info.Plugin, "UNKNOWN") {
		t.Errorf("csi info plugin capabilities = %v, want VOLUME_EXPANSION_ONLINE and no UNKNOWN", info.Plugin)
	}
	if out := c.ok(csi("info")...); strings.Contains(out, "UNKNOWN") {
		t.Errorf("csi info:\n%s", out)
	}
	vol := strings.TrimSpace(c.ok(csi("volume", "create", "v1", "--size", "64Mi", "--fs-type", "ext4", "--node-topology", "-q")...))
	vols := decode[struct {
		Entries []struct {
			Volume struct {
				VolumeID string `json:"volume_id"`
				Capacity string `json:"capacity_bytes"`
			} `json:"volume"`
		} `json:"entries"`
	}](t, c.ok(csi("volume", "list", "-o", "json")...))
	if len(vols.Entries) != 1 || vols.Entries[0].Volume.VolumeID != vol || vols.Entries[0].Volume.Capacity != "67108864" {
		t.Fatalf("volume list = %+v, want %s of 64 MiB", vols, vol)
	}
	stage, pub := filepath.Join(dir, "stage"), filepath.Join(dir, "pub")
	c.ok(csi("stage", vol, "--staging-path", stage, "--fs-type", "ext4")...)
	c.ok(csi("publish", vol, "--staging-path", stage, "--target-path", pub, "--fs-type", "ext4")...)
	if out := c.ok(csi("stats", vol, "--volume-path", pub)...); !strings.Contains(out, "BYTES") {
		t.Errorf("stats:\n%s", out)
	}
	snap := strings.TrimSpace(c.ok(csi("snapshot", "create", "s1", "--source", vol, "--wait", "-q")...))
	if out := c.ok(csi("snapshot", "list", "--source", vol)...); !strings.Contains(out, snap) {
		t.Errorf("snapshot list lacks %s:\n%s", snap, out)
	}
	c.ok(csi("unpublish", vol, "--target-path", pub)...)
	c.ok(csi("unstage", vol, "--staging-path", stage)...)
	c.ok(csi("snapshot", "delete", snap)...)
	c.ok(csi("volume", "delete", vol)...)
	if e := c.fails(1, "csi", "--endpoint", "unix://"+filepath.Join(dir, "none.sock"), "--timeout", "2s", "info"); !strings.Contains(e, "hint:") {
		t.Errorf("no hint for a missing socket: %s", e)
	}
}
