package cli

import (
	"strings"
	"testing"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
)

// TestCSIGroup drives the GroupController through "chainvolctl csi group":
// a group of two volumes, read back with its members, then deleted.
func TestCSIGroup(t *testing.T) {
	pool := testutil.LoopFS(t, "xfs", 1<<30)
	n := csitest.Start(t, "cli-node", pool, nil)
	c := &ctl{t: t}
	csi := func(args ...string) []string { return append([]string{"csi", "--endpoint", n.Endpoint}, args...) }
	if out := c.ok(csi("info")...); !strings.Contains(out, "GROUP_CONTROLLER_SERVICE") {
		t.Errorf("csi info does not show the group controller:\n%s", out)
	}
	a := strings.TrimSpace(c.ok(csi("volume", "create", "ga", "--size", "64Mi", "--fs-type", "ext4", "-q")...))
	b := strings.TrimSpace(c.ok(csi("volume", "create", "gb", "--size", "64Mi", "--fs-type", "ext4", "-q")...))
	gid := strings.TrimSpace(c.ok(csi("group", "create", "g1", "--source", a, "--source", b, "--wait", "-q")...))
	if !strings.HasPrefix(gid, "g-") {
		t.Fatalf("group id %q", gid)
	}
	g := decode[struct {
		ID        string `json:"group_snapshot_id"`
		Ready     bool   `json:"ready_to_use"`
		Snapshots []struct {
			Source string `json:"source_volume_id"`
			Group  string `json:"group_snapshot_id"`
		} `json:"snapshots"`
	}](t, c.ok(csi("group", "get", gid, "-o", "json")...))
	if g.ID != gid || !g.Ready || len(g.Snapshots) != 2 || g.Snapshots[0].Group != gid {
		t.Fatalf("group get = %+v", g)
	}
	c.ok(csi("group", "delete", gid)...)
	if e := c.fails(1, csi("group", "get", gid)...); !strings.Contains(e, "NotFound") || !strings.Contains(e, gid) {
		t.Errorf("get of a deleted group: %s", e)
	}
	c.ok(csi("group", "delete", gid)...) // gone: still success
}
