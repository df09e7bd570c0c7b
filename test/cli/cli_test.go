package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
)

// backupJSON is what backup ls / create print with -o json.
type backupJSON struct {
	Chain        string `json:"chain"`
	ID           string `json:"id"`
	Parent       string `json:"parent"`
	SizeBytes    int64  `json:"sizeBytes"`
	ChangedBytes int64  `json:"changedBytes"`
	StoredBytes  int64  `json:"storedBytes"`
	FSType       string `json:"fsType"`
}

type gcJSON struct {
	DryRun        bool `json:"dryRun"`
	DeletedBlocks int  `json:"deletedBlocks"`
}

func decode[T any](t testing.TB, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("parse JSON output: %v\n%s", err, s)
	}
	return v
}

// TestFileTarget runs the whole operator story on the embedded default
// target (file://STATE/backups), then corrupts a block object on disk.
func TestFileTarget(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	c := &ctl{t: t}
	c.env = []string{}
	g := []string{"--state-dir", state}
	s := storyRun(t, c, dir, g, "", filepath.Join(state, "backups"))

	// --deep reads every block: flip one byte of every block object. (One
	// object alone is not enough: in a small compressed object the middle
	// byte may be a bit of the zstd frame header that does not change what
	// it decodes to, and the digests, so the order of the files, change
	// with each chain's random key.)
	for _, f := range blockFiles(t, filepath.Join(state, "backups")) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0x5a
		if err := os.WriteFile(f, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range s.kept {
		r := c.run(append(g, "backup", "verify", "lab/disk1@"+id, "--deep")...)
		if r.code != 1 || !strings.Contains(r.stderr, "corrupt") {
			t.Fatalf("verify --deep of %s with corrupted blocks: exit %d, want 1 naming corruption; stderr: %q", id, r.code, r.stderr)
		}
	}
}

// TestS3Target runs the same story on a real S3 server, the target and
// credentials coming from the environment.
func TestS3Target(t *testing.T) {
	srv := testutil.StartS3(t)
	dir := t.TempDir()
	c := &ctl{t: t, secrets: []string{srv.SecretKey}}
	c.env = []string{"CHAINVOL_TARGETS=s3=" + srv.URL("chainvol"), "CHAINVOL_ACCESS_KEY_ID=" + srv.AccessKey,
		"CHAINVOL_SECRET_ACCESS_KEY=" + srv.SecretKey}
	g := []string{"--state-dir", filepath.Join(dir, "state")}
	out := c.ok(append(g, "target", "check", "-o", "json")...)
	rows := decode[[]struct {
		Name      string `json:"name"`
		Reachable bool   `json:"reachable"`
		Writable  bool   `json:"writable"`
	}](t, out)
	if len(rows) != 1 || rows[0].Name != "s3" || !rows[0].Reachable || !rows[0].Writable {
		t.Fatalf("target check = %+v, want s3 reachable and writable", rows)
	}
	storyRun(t, c, dir, g, "s3:", "")

	// Wrong credentials: exit 1, a hint, and the secret still not printed.
	bad := &ctl{t: t, secrets: []string{"not-the-secret-123"}, env: []string{"CHAINVOL_TARGETS=s3=" + srv.URL("chainvol"),
		"CHAINVOL_ACCESS_KEY_ID=" + srv.AccessKey, "CHAINVOL_SECRET_ACCESS_KEY=not-the-secret-123"}}
	if e := bad.fails(1, append(g, "chain", "ls")...); !strings.Contains(e, "hint:") {
		t.Errorf("access denied error has no hint: %s", e)
	}
}

// TestUsageErrors checks that scripts can tell a typo (exit 2) from a
// failure (exit 1).
func TestUsageErrors(t *testing.T) {
	c := &ctl{t: t}
	g := []string{"--state-dir", t.TempDir()}
	for _, args := range [][]string{
		{"--no-such-flag"},
		{"no-such-command"},
		{"backup", "no-such-command"},
		{"backup", "ls"},
		{"backup", "show", "not a ref"},
		{"backup", "create", "--from", "/nonexistent"},
		{"-o", "yaml", "chain", "ls"},
		{"csi", "volume", "create", "x", "--size", "lots"},
	} {
		if e := c.fails(2, append(g, args...)...); !strings.Contains(e, "Error:") {
			t.Errorf("%v: no error message: %q", args, e)
		}
	}
	c.fails(3, append(g, "backup", "ls", "nochain")...) // not found, as in a target that has other chains
	if out := c.ok("--help"); !strings.Contains(out, "Examples:") {
		t.Errorf("--help has no examples")
	}
}
