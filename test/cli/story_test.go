package cli

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// story is what storyRun leaves: the backups kept and their image sha256.
type story struct {
	kept []string
	sums map[string]string
}

// storyRun backs up an ext4 image three times (full, then two incremental),
// lists, shows, verifies and restores them byte-identical, removes the
// middle backup, and garbage-collects exactly the block only it used. ref is
// the target prefix of references ("" or "s3:"); fileRoot, if set, is the
// file target's directory, whose block objects are counted around gc.
func storyRun(t *testing.T, c *ctl, dir string, g []string, ref, fileRoot string) story {
	chain := ref + "lab/disk1"
	cmd := func(args ...string) []string { return append(append([]string{}, g...), args...) }
	img := makeImage(t, dir)
	sums := map[string]string{}
	var ids []string
	for i := range 3 {
		if i > 0 { // change one aligned block, then that one again and another
			writeRandom(t, img, 40<<20, blockSize)
			if i == 2 {
				writeRandom(t, img, 50<<20, blockSize/2)
			}
		}
		b := decode[backupJSON](t, c.ok(cmd("backup", "create", "--from", img, "--chain", chain,
			"--block-size", fmt.Sprint(blockSize), "--id", fmt.Sprintf("b%d", i), "-o", "json")...))
		want := ""
		if i > 0 {
			want = ids[i-1]
		}
		if b.Parent != want || b.FSType != "ext4" || b.SizeBytes != imageSize || b.Chain != "lab/disk1" {
			t.Fatalf("backup %d = %+v; want parent %q, ext4, %d bytes", i, b, want, imageSize)
		}
		if i > 0 && b.ChangedBytes > 2*blockSize {
			t.Errorf("incremental backup %d changed %d bytes; only 1-2 blocks changed", i, b.ChangedBytes)
		}
		ids = append(ids, b.ID)
		sums[b.ID] = sha(t, img)
	}

	chains := decode[[]struct {
		Name    string `json:"name"`
		Backups int    `json:"backups"`
		Latest  string `json:"latest"`
	}](t, c.ok(cmd("chain", "ls", "--in", strings.TrimSuffix(ref, ":"), "-o", "json")...))
	if len(chains) != 1 || chains[0].Name != "lab/disk1" || chains[0].Backups != 3 || chains[0].Latest != ids[2] {
		t.Fatalf("chain ls = %+v", chains)
	}
	ls := decode[[]backupJSON](t, c.ok(cmd("backup", "ls", chain, "-o", "json")...))
	if len(ls) != 3 || ls[1].Parent != ids[0] || ls[2].Parent != ids[1] {
		t.Fatalf("backup ls = %+v", ls)
	}
	if out := c.ok(cmd("backup", "ls", chain)...); !strings.Contains(out, "CHANGED") || !strings.Contains(out, ids[1]) {
		t.Errorf("backup ls table:\n%s", out)
	}
	show := decode[struct {
		ID, FSType, Digest, VolumeDigest string
		ParentID                         string `json:"parentId"`
	}](t, c.ok(cmd("backup", "show", chain+"@latest", "-o", "json")...))
	if show.ID != ids[2] || show.ParentID != ids[1] || show.FSType != "ext4" || len(show.Digest) != 64 || show.VolumeDigest == "" {
		t.Fatalf("backup show = %+v", show)
	}
	for _, id := range ids {
		c.ok(cmd("backup", "verify", chain+"@"+id)...)
	}
	c.ok(cmd("backup", "verify", chain+"@latest", "--deep")...)
	restoreCheck(t, c, g, chain, ids, sums, dir, "before")

	// Remove the middle backup: the others still restore to the same bytes.
	c.ok(cmd("backup", "rm", chain+"@"+ids[1])...)
	kept := []string{ids[0], ids[2]}
	if ls := decode[[]backupJSON](t, c.ok(cmd("backup", "ls", chain, "-o", "json")...)); len(ls) != 2 || ls[1].ID != ids[2] {
		t.Fatalf("after rm, backup ls = %+v", ls)
	}
	c.fails(3, cmd("backup", "show", chain+"@"+ids[1])...) // 3: not found (issue 17)
	gcCheck(t, c, g, ref, fileRoot)
	for _, id := range kept {
		c.ok(cmd("backup", "verify", chain+"@"+id, "--deep")...)
	}
	restoreCheck(t, c, g, chain, kept, sums, dir, "after")
	return story{kept: kept, sums: sums}
}

// restoreCheck restores each backup to a new file and compares sha256; a
// second restore onto the existing file without --force is a usage error.
func restoreCheck(t *testing.T, c *ctl, g []string, chain string, ids []string, sums map[string]string, dir, tag string) {
	t.Helper()
	for _, id := range ids {
		out := filepath.Join(dir, "restored-"+tag+"-"+id+".img")
		c.ok(append(g, "restore", chain+"@"+id, "--to", out)...)
		if got := sha(t, out); got != sums[id] {
			t.Fatalf("restore of %s (%s): sha256 %s, want %s", id, tag, got, sums[id])
		}
		c.fails(2, append(g, "restore", chain+"@"+id, "--to", out)...)
	}
}

// gcCheck: a dry run deletes nothing, the real run exactly the one block
// only the removed backup referenced (--min-age 0s: the block is seconds old,
// younger than gc's default grace period).
func gcCheck(t *testing.T, c *ctl, g []string, ref, fileRoot string) {
	t.Helper()
	in := strings.TrimSuffix(ref, ":")
	before := 0
	if fileRoot != "" {
		before = len(blockFiles(t, fileRoot))
	}
	dry := decode[gcJSON](t, c.ok(append(g, "gc", "--dry-run", "--min-age", "0s", "--in", in, "-o", "json")...))
	if fileRoot != "" && len(blockFiles(t, fileRoot)) != before {
		t.Fatalf("gc --dry-run deleted block objects")
	}
	real := decode[gcJSON](t, c.ok(append(g, "gc", "--min-age", "0s", "--in", in, "-o", "json")...))
	if !dry.DryRun || real.DryRun || dry.DeletedBlocks != 1 || real.DeletedBlocks != 1 {
		t.Fatalf("gc dry run %+v, real %+v; want exactly 1 unreferenced block", dry, real)
	}
	if fileRoot != "" && len(blockFiles(t, fileRoot)) != before-1 {
		t.Fatalf("gc left %d block objects, want %d", len(blockFiles(t, fileRoot)), before-1)
	}
}
