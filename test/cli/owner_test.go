package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChainOwner: backup create of another, larger disk into a chain that
// holds one disk's history is refused (exit 1) naming both sources and the
// ways out, and the chain's latest still restores the first disk; the same
// disk goes on incrementally; --take-over (or chain take-over) continues
// the chain on purpose, after which the first disk is refused.
func TestChainOwner(t *testing.T) {
	dir := t.TempDir()
	c := &ctl{t: t, env: []string{}}
	g := []string{"--state-dir", filepath.Join(dir, "state")}
	cmd := func(args ...string) []string { return append(append([]string{}, g...), args...) }
	a := makeImage(t, dir)
	bdir := filepath.Join(dir, "b")
	if err := os.Mkdir(bdir, 0o755); err != nil {
		t.Fatal(err)
	}
	b := makeImage(t, bdir)
	if err := os.Truncate(b, imageSize*2); err != nil {
		t.Fatal(err)
	}
	c.ok(cmd("backup", "create", "--from", a, "--chain", "lab/vm1")...)
	out := c.fails(1, cmd("backup", "create", "--from", b, "--chain", "lab/vm1")...)
	for _, want := range []string{a, b, "--chain", "take-over"} {
		if !strings.Contains(out, want) {
			t.Fatalf("refusal does not name %q: %s", want, out)
		}
	}
	restored := filepath.Join(dir, "restored.img")
	c.ok(cmd("restore", "lab/vm1@latest", "--to", restored)...)
	if sha(t, restored) != sha(t, a) {
		t.Fatal("latest does not restore the chain's own disk")
	}
	c.ok(cmd("backup", "create", "--from", a, "--chain", "lab/vm1")...)
	c.ok(cmd("backup", "create", "--from", b, "--chain", "lab/vm1", "--take-over")...)
	c.fails(1, cmd("backup", "create", "--from", a, "--chain", "lab/vm1")...)
	if !strings.Contains(c.ok(cmd("chain", "take-over", "lab/vm1", "--from", a)...), "now belongs to") {
		t.Fatal("chain take-over said nothing")
	}
	c.ok(cmd("backup", "create", "--from", a, "--chain", "lab/vm1")...)
	if out := c.ok(cmd("chain", "take-over", "lab/vm1", "--from", a)...); !strings.Contains(out, "already belongs") {
		t.Fatalf("take-over by the owner itself: %s", out)
	}
	if out := c.ok(cmd("chain", "ls", "-o", "json")...); !strings.Contains(out, `"owner": "host/`) {
		t.Fatalf("chain ls -o json shows no owner: %s", out)
	}
}
