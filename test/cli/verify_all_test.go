package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// verifyAllOut is "verify --all -o json".
type verifyAllOut struct {
	Chains, Backups, OK, Failed int
	Results                     []struct {
		Chain, ID, Error string
		OK               bool
	}
}

// TestVerifyAll: "verify --all" checks every backup of every chain of a
// target; a corrupt block fails (with --deep) exactly the backup that uses
// it, a missing one (without --deep too) the backup of the other chain; the
// summary counts them and the exit code is 1.
func TestVerifyAll(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "state", "backups")
	c := &ctl{t: t}
	g := []string{"--state-dir", filepath.Join(dir, "state")}
	rawChain(t, c, g, dir) // lab/raw: b0, b1, b2
	other := filepath.Join(dir, "other.img")
	writeRandom(t, other, 0, 2*blockSize)
	c.ok(append(g, "backup", "create", "--from", other, "--chain", "lab/other", "--block-size", "1048576", "--id", "o0")...)

	all := func(code int, extra ...string) verifyAllOut {
		t.Helper()
		r := c.run(append(append(g, "verify", "--all", "-o", "json"), extra...)...)
		if r.code != code {
			t.Fatalf("verify --all %v: exit %d, want %d\n%s%s", extra, r.code, code, r.stdout, r.stderr)
		}
		return decode[verifyAllOut](t, r.stdout)
	}
	if v := all(0, "--deep"); v.Chains != 2 || v.Backups != 4 || v.OK != 4 || v.Failed != 0 {
		t.Fatalf("verify --all --deep of a sound target = %+v, want 2 chains, 4 backups OK", v)
	}

	// The block only b2 uses: garbage. Only --deep reads it.
	corruptBlock(t, root, blockDigest(t, c, g, "lab/raw@b2", 5))
	all(0)
	v := all(1, "--deep")
	if v.Chains != 2 || v.Backups != 4 || v.OK != 3 || v.Failed != 1 {
		t.Fatalf("verify --all --deep with b2's block corrupt = %+v, want 3 OK, 1 failed", v)
	}
	for _, r := range v.Results {
		if r.OK == (r.ID == "b2") || r.ID == "b2" && !strings.Contains(r.Error, "hint:") {
			t.Errorf("result %+v: only b2 should fail, with a reason and a hint", r)
		}
	}

	// The other chain's block gone: found without --deep too; the table
	// names both failures and the summary counts them.
	for _, f := range blockFiles(t, root) {
		if strings.Contains(f, blockDigest(t, c, g, "lab/other@o0", 1)) {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := c.run(append(g, "verify", "--all", "--deep")...)
	if r.code != 1 || !strings.Contains(r.stdout, "2 chains (0 skipped), 4 backups: 2 OK, 2 failed") ||
		strings.Count(r.stdout, "FAILED:") != 2 || !strings.Contains(r.stderr, "2 of 4 backups") {
		t.Fatalf("verify --all --deep: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if v := all(1); v.Failed != 1 || v.Results[0].Chain != "lab/other" || v.Results[0].OK {
		t.Fatalf("verify --all with o0's block missing = %+v, want lab/other@o0 failed", v)
	}
	c.fails(2, append(g, "verify", "--all", "lab/raw@b0")...)
	c.fails(2, append(g, "verify", "--all", "--in", "nope")...)
}
