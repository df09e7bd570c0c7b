package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// rmPreview is the JSON of "backup rm --dry-run -o json".
type rmPreview struct {
	DryRun  bool `json:"dryRun"`
	Removed []struct {
		Chain, ID string
	} `json:"removed"`
	FreedBlocks  int   `json:"freedBlocks"`
	FreedBytes   int64 `json:"freedBytes"`
	EmptiesChain bool  `json:"emptiesChain"`
}

// gcFreed is the JSON of "gc -o json", the part compared.
type gcFreed struct {
	DeletedBlocks int   `json:"deletedBlocks"`
	DeletedBytes  int64 `json:"deletedBytes"`
}

// TestBackupRmDryRun (issue 25 item 6.3): "backup rm --dry-run" deletes
// nothing and counts the blocks (and bytes) only the backup references:
// exactly what a following real rm and "gc --min-age 0" delete, for a
// backup in the middle of a chain and for a chain's only backup. On main
// rm had no --dry-run (a usage error, exit 2).
func TestBackupRmDryRun(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	c := &ctl{t: t}
	g := func(a ...string) []string { return append([]string{"--state-dir", state}, a...) }
	img := makeImage(t, dir)
	var ids []string
	for i := 0; i < 3; i++ {
		if i > 0 { // block 40 changes in each backup, block 50 only in the second
			writeRandom(t, img, 40*blockSize, blockSize)
		}
		if i == 1 {
			writeRandom(t, img, 50*blockSize, blockSize)
		}
		out := c.ok(g("backup", "create", "--from", img, "--chain", "lab/rm", "--block-size", "1048576", "-o", "json")...)
		ids = append(ids, decode[struct{ ID string }](t, out).ID)
	}
	c.ok(g("backup", "create", "--from", img, "--chain", "lab/only", "--block-size", "1048576")...)

	for _, tc := range []struct{ ref, chain string }{{"lab/rm@" + ids[1], "lab/rm"}, {"lab/only@latest", "lab/only"}} {
		blocks := len(blockFiles(t, filepath.Join(state, "backups")))
		text := c.ok(g("backup", "rm", tc.ref, "--dry-run")...)
		t.Logf("backup rm %s --dry-run:\n%s", tc.ref, text)
		p := decode[rmPreview](t, c.ok(g("backup", "rm", tc.ref, "--dry-run", "-o", "json")...))
		if !strings.Contains(text, "would remove") || !strings.Contains(text, "gc --min-age 0' may free") {
			t.Errorf("backup rm %s --dry-run: %q", tc.ref, text)
		}
		if !p.DryRun || len(p.Removed) != 1 || p.FreedBlocks == 0 || p.EmptiesChain != (tc.chain == "lab/only") {
			t.Errorf("backup rm %s --dry-run -o json: %+v", tc.ref, p)
		}
		c.ok(g("backup", "show", tc.ref)...) // still there
		if n := len(blockFiles(t, filepath.Join(state, "backups"))); n != blocks {
			t.Fatalf("a dry run changed the block count from %d to %d", blocks, n)
		}
		c.ok(g("backup", "rm", tc.ref)...)
		gc := decode[gcFreed](t, c.ok(g("gc", "--chain", tc.chain, "--min-age", "0", "-o", "json")...))
		if gc.DeletedBlocks != p.FreedBlocks || gc.DeletedBytes != p.FreedBytes {
			t.Errorf("backup rm %s: the dry run said %d blocks (%d bytes), gc --min-age 0 deleted %d (%d bytes)",
				tc.ref, p.FreedBlocks, p.FreedBytes, gc.DeletedBlocks, gc.DeletedBytes)
		}
	}
}
