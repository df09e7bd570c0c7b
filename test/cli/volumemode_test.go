package cli

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/internal/csitest"
	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/driver"
	"github.com/chainvol/chainvol/pkg/s3chain"
)

// TestBlockBackupRoundTrip: a raw block device backed up by chainvolctl
// restores through the driver's CreateVolume as a block volume, and a block
// volume the driver backs up restores with chainvolctl; both record the
// volume mode of docs/FORMAT.md (issue 20: the CLI wrote "Block", the driver
// "block" and compared against "block", so the first direction failed).
func TestBlockBackupRoundTrip(t *testing.T) {
	const size = 16 << 20
	pool := testutil.LoopFS(t, "xfs", 1<<30)
	dir := t.TempDir()
	store := filepath.Join(dir, "backups")
	if err := os.Mkdir(store, 0o750); err != nil {
		t.Fatal(err)
	}
	tgt := "t=file://" + store
	n := csitest.Start(t, "rt-node", pool, func(o *driver.Options) { o.BackupTargets = []string{tgt} })
	c := &ctl{t: t}
	csi := func(args ...string) []string { return append([]string{"csi", "--endpoint", n.Endpoint}, args...) }
	mode := func(ref string) string {
		return decode[struct {
			VolumeMode string `json:"volumeMode"`
		}](t, c.ok("--target", tgt, "backup", "show", ref, "-o", "json")).VolumeMode
	}

	// chainvolctl -> driver: a loop device with no filesystem on it.
	img := filepath.Join(dir, "raw.img")
	writeRandom(t, img, 0, size)
	dev := testutil.Run(t, "losetup", "--find", "--show", "--read-only", img)
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	c.ok("--target", tgt, "backup", "create", "--from", dev, "--chain", "lab/raw", "--block-size", "1048576")
	if m := mode("lab/raw@latest"); m != s3chain.VolumeModeBlock {
		t.Fatalf("chainvolctl recorded volume mode %q for a raw device, want %q", m, s3chain.VolumeModeBlock)
	}
	vol := strings.TrimSpace(c.ok(csi("volume", "create", "restored", "--size", "16Mi", "--block",
		"--param", "fromBackup=t:lab/raw@latest", "--wait", "-q")...))
	pub, release := publishBlock(t, c, csi, vol, filepath.Join(dir, "a"))
	if got, want := shaN(t, pub, size), shaN(t, img, size); got != want {
		t.Fatalf("block volume restored by the driver: sha256 %s, want %s", got, want)
	}
	release()

	// driver -> chainvolctl: a block volume, backed up by a snapshot.
	src := strings.TrimSpace(c.ok(csi("volume", "create", "raw-src", "--size", "16Mi", "--block", "-q")...))
	pub, release = publishBlock(t, c, csi, src, filepath.Join(dir, "b"))
	writeSynced(t, pub, size)
	want := shaN(t, pub, size)
	release()
	c.ok(csi("snapshot", "create", "raw-bk", "--source", src, "--param", "backup=true", "--param", "backupTarget=t", "--wait", "-q")...)
	chains := decode[[]struct {
		Name string `json:"name"`
	}](t, c.ok("--target", tgt, "chain", "ls", "-o", "json"))
	chain := ""
	for _, ch := range chains {
		if ch.Name != "lab/raw" {
			chain = ch.Name
		}
	}
	if chain == "" {
		t.Fatalf("no chain from the driver's backup: %+v", chains)
	}
	if m := mode(chain + "@latest"); m != s3chain.VolumeModeBlock {
		t.Fatalf("the driver recorded volume mode %q for a block volume, want %q", m, s3chain.VolumeModeBlock)
	}
	out := filepath.Join(dir, "restored.img")
	c.ok("--target", tgt, "restore", chain+"@latest", "--to", out)
	if got := shaN(t, out, size); got != want {
		t.Fatalf("chainvolctl restore of the driver's block backup: sha256 %s, want %s", got, want)
	}
}

// publishBlock stages and publishes vol as a raw block device under dir
// with "chainvolctl csi" and returns the device path and its release.
func publishBlock(t *testing.T, c *ctl, csi func(...string) []string, vol, dir string) (string, func()) {
	t.Helper()
	stage, pub := filepath.Join(dir, "stage"), filepath.Join(dir, "pub")
	c.ok(csi("stage", vol, "--staging-path", stage, "--block")...)
	c.ok(csi("publish", vol, "--staging-path", stage, "--target-path", pub, "--block")...)
	done := false
	release := func() {
		if !done {
			done = true
			c.ok(csi("unpublish", vol, "--target-path", pub)...)
			c.ok(csi("unstage", vol, "--staging-path", stage)...)
		}
	}
	t.Cleanup(release)
	return pub, release
}

// writeSynced fills the first n bytes of a device with random data and
// flushes it, so that the snapshot sees it.
func writeSynced(t *testing.T, path string, n int) {
	t.Helper()
	writeRandom(t, path, 0, n)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// shaN is the hex sha256 of the first n bytes of a file or device.
func shaN(t *testing.T, path string, n int64) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyN(h, f, n); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
