package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArgumentErrorsExit2: every mistake in what the operator typed - a
// malformed target URL, an unknown target name, a bad reference, a flag
// value no command can use, a source that does not exist - exits 2 with
// the usage hint, before anything is contacted (issue 20: a malformed
// target URL exited 1).
func TestArgumentErrorsExit2(t *testing.T) {
	dir := t.TempDir()
	img := filepath.Join(dir, "disk.img")
	writeRandom(t, img, 0, 1<<20)
	c := &ctl{t: t}
	g := []string{"--state-dir", filepath.Join(dir, "state")}
	for _, args := range [][]string{
		{"--target", "x=http://foo", "chain", "ls"},
		{"--target", "x=file://relative/dir", "chain", "ls"},
		{"--target", "x=file:///", "target", "ls"},
		{"--target", "x=s3://Bad_Bucket", "chain", "ls"},
		{"--target", "x=s3://bucket?endpoint=http://host:9000", "backup", "ls", "a/b"},
		{"--target", "x=s3://bucket?colour=blue", "target", "check"},
		{"--target", "x=s3://bucket?endpoint=host:99999", "gc"},
		{"--target", "no equals sign", "chain", "ls"},
		{"chain", "ls", "--in", "nosuch"},
		{"gc", "--in", "nosuch"},
		{"target", "check", "nosuch"},
		{"backup", "ls", "nosuch:a/b"},
		{"backup", "ls", "not a chain"},
		{"backup", "show", "a/b@"},
		{"backup", "verify", "a/b"},
		{"restore", "a/b@", "--to", filepath.Join(dir, "out.img")},
		{"backup", "create", "--from", filepath.Join(dir, "nonexistent"), "--chain", "a/b"},
		{"backup", "create", "--from", img, "--chain", "a/b", "--block-size", "1000"},
		{"backup", "create", "--from", img, "--chain", "a/b", "--id", "-bad"},
		{"backup", "create", "--from", img, "--chain", "a/b", "--workers", "-1"},
		{"backup", "create", "--from", img, "--chain", "a/b", "--progress-interval", "0s"},
		{"backup", "create", "--from", img, "--chain", "nosuch:a/b"},
		{"restore", "a/b@latest", "--to", filepath.Join(dir, "missing", "dir", "out.img")},
		{"verify", "--all", "--in", "nosuch"},
		{"target", "init", "nosuch"},
		{"restore", "a/b@latest", "--to", filepath.Join(dir, "out.img"), "--workers", "-2"},
		{"gc", "--min-age", "-1h"},
		{"gc", "--chain", "../x"},
		{"csi", "--timeout", "0s", "info"},
		{"csi", "--endpoint", "tcp://host:1", "info"},
	} {
		e := c.fails(2, append(g, args...)...)
		if !strings.Contains(e, "Error:") || !strings.Contains(e, "--help") {
			t.Errorf("%v: want an error and the usage hint, got %q", args, e)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "state", "backups", "a")); err == nil {
		t.Errorf("a refused backup create wrote into the target")
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Errorf("a refused restore created the directories of its --to")
	}
}

// TestEmptyFileTarget: a file:// target whose directory does not exist yet
// is empty, not unreachable - "backup create" makes it (issue 20).
func TestEmptyFileTarget(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state") // no backups/ below it yet
	c := &ctl{t: t}
	g := []string{"--state-dir", state}

	r := c.run(append(g, "target", "check")...)
	if r.code != 0 || !strings.Contains(r.stdout, "empty") || !strings.Contains(r.stdout, "first backup") ||
		strings.Contains(strings.ToLower(r.stdout+r.stderr), "unreachable") {
		t.Fatalf("target check of a missing default directory: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	rows := decode[[]struct {
		Reachable bool   `json:"reachable"`
		Error     string `json:"error"`
		Note      string `json:"note"`
	}](t, c.ok(append(g, "target", "check", "-o", "json")...))
	if len(rows) != 1 || !rows[0].Reachable || rows[0].Error != "" || !strings.Contains(rows[0].Note, "empty") {
		t.Fatalf("target check -o json = %+v", rows)
	}

	r = c.run(append(g, "chain", "ls")...)
	if r.code != 0 || !strings.Contains(r.stdout, "CHAIN") || !strings.Contains(r.stderr, "empty") ||
		strings.Contains(r.stderr, "hint: check the target URL") {
		t.Fatalf("chain ls on a missing default directory: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	other := filepath.Join(dir, "not-yet")
	if out := c.ok("--target", "x=file://"+other, "chain", "ls", "-o", "json"); strings.TrimSpace(out) != "[]" {
		t.Errorf("chain ls -o json of an empty target = %q, want []", out)
	}
	// 3, not found (operator.md's exit codes): the chain asked for does
	// not exist in an empty target; the message names the directory.
	if e := c.fails(3, append(g, "backup", "ls", "a/b")...); !strings.Contains(e, "empty") || strings.Contains(e, "check the target URL") {
		t.Errorf("backup ls on an empty target: %q", e)
	}
	if r := c.run(append(g, "gc")...); r.code != 0 || !strings.Contains(r.stdout, "0 chains") || !strings.Contains(r.stderr, "empty") {
		t.Errorf("gc on an empty target: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "backups")); err == nil {
		t.Fatalf("a read command created the target directory")
	}

	img := filepath.Join(dir, "disk.img")
	writeRandom(t, img, 0, 2<<20)
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "a/b")...)
	if out := c.ok(append(g, "target", "check")...); strings.Contains(out, "empty") || !strings.Contains(out, "yes") {
		t.Errorf("target check after the first backup:\n%s", out)
	}
}

// TestCorruptBlockHint: after a corrupt block, the hint names the backups
// of the chain that do not use that block, and only those (issue 20).
func TestCorruptBlockHint(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "state", "backups")
	c := &ctl{t: t}
	g := []string{"--state-dir", filepath.Join(dir, "state")}
	rawChain(t, c, g, dir)
	digest := func(id string, index int64) string { return blockDigest(t, c, g, "lab/raw@"+id, index) }
	corrupt := func(d string) { corruptBlock(t, root, d) }

	corrupt(digest("b2", 5)) // only b2 uses its block 5
	e := c.fails(1, append(g, "backup", "verify", "lab/raw@b2", "--deep")...)
	hint := e[strings.Index(e, "hint:"):]
	if !strings.Contains(hint, "b0, b1") || strings.Contains(hint, "b2") {
		t.Fatalf("the hint should name b0 and b1 (not b2) as free of the corrupt block:\n%s", e)
	}
	c.ok(append(g, "backup", "verify", "lab/raw@b1", "--deep")...)

	corrupt(digest("b0", 0)) // block 0 never changed: every backup uses it
	e = c.fails(1, append(g, "backup", "verify", "lab/raw@b1", "--deep")...)
	if !strings.Contains(e, "every backup of chain lab/raw uses") {
		t.Fatalf("a block all backups use: %s", e)
	}
}

// TestBackupTooLargeForChain: backing up a source larger than its chain
// holds (1 Mi blocks of the block size its first backup fixed: 64 GiB at
// 64 KiB) fails with the limit in bytes and --chain, a new chain, as the way
// out; the same source goes into a new chain (issue 24). The large source
// is a sparse file.
func TestBackupTooLargeForChain(t *testing.T) {
	dir := t.TempDir()
	c := &ctl{t: t}
	g := []string{"--state-dir", filepath.Join(dir, "state")}
	img := filepath.Join(dir, "disk.img")
	writeRandom(t, img, 0, 1<<20)
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "lab/grown", "--block-size", "65536")...)
	const limit = 1 << 20 * 65536
	if err := os.Truncate(img, limit+65536); err != nil {
		t.Fatal(err)
	}
	stderr := c.fails(1, append(g, "backup", "create", "--from", img, "--chain", "lab/grown")...)
	for _, w := range []string{"68719476736", "lab/grown", "--chain", "new chain"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("backup of %d bytes into a 64 KiB-block chain: stderr does not name %q:\n%s", limit+65536, w, stderr)
		}
	}
	c.ok(append(g, "backup", "create", "--from", img, "--chain", "lab/grown-2")...)
}

// blockDigest is the digest of block index of backup ref, from "backup show
// --blocks".
func blockDigest(t *testing.T, c *ctl, g []string, ref string, index int64) string {
	t.Helper()
	show := decode[struct {
		Blocks []struct {
			I int64  `json:"i"`
			D string `json:"d"`
		} `json:"blocks"`
	}](t, c.ok(append(g, "backup", "show", ref, "-o", "json", "--blocks")...))
	for _, b := range show.Blocks {
		if b.I == index {
			return b.D
		}
	}
	t.Fatalf("backup %s lists no block %d", ref, index)
	return ""
}

// corruptBlock overwrites the block object named by digest d under the
// file target root with garbage.
func corruptBlock(t *testing.T, root, d string) {
	t.Helper()
	for _, f := range blockFiles(t, root) {
		if strings.Contains(f, d) {
			if err := os.WriteFile(f, []byte("garbage"), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("no block object named %s", d)
}

// rawChain backs up an image of 8 random 1 MiB blocks as chain lab/raw:
// b0 full, b1 with block 3 changed, b2 with block 5 changed.
func rawChain(t *testing.T, c *ctl, g []string, dir string) {
	t.Helper()
	img := filepath.Join(dir, "raw.img")
	writeRandom(t, img, 0, 8*blockSize)
	for i, changed := range []int64{-1, 3, 5} {
		if changed >= 0 {
			writeRandom(t, img, changed*blockSize, blockSize)
		}
		c.ok(append(g, "backup", "create", "--from", img, "--chain", "lab/raw", "--block-size", "1048576", "--id", fmt.Sprintf("b%d", i))...)
	}
}
