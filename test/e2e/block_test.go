package e2e

import (
	"crypto/sha256"
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestBlockRoundTrip: random bytes written to a published raw block volume
// come back identical from a backup restored as a block volume.
func TestBlockRoundTrip(t *testing.T) {
	n := startDriver(t, "node-a", nil)
	const size = 256 * mib
	vol := createVolume(t, n.Ctrl, "raw", size, blockCap(), nil)
	p := stagePublish(t, n.Node, vol.GetVolumeId(), blockCap())
	writeDevice(t, p.Path, 7, []int64{0, 37 * mib, 128*mib + 4096, size - 2*mib}, int(2*mib))
	want := hashDevice(t, p.Path)
	unpublishUnstage(t, p)
	id := backup(t, n.Ctrl, vol.GetVolumeId(), "raw-b1", "")

	v := restore(t, n.Ctrl, restoreReq("raw-copy", id, size, blockCap()))
	if fs := v.GetVolumeContext()["fsType"]; fs != "" {
		t.Errorf("restored block volume has volume_context fsType %q, want none", fs)
	}
	rp := stagePublish(t, n.Node, v.GetVolumeId(), blockCap())
	if got := hashDevice(t, rp.Path); got != want {
		t.Fatalf("restored block device sha256 %x, want %x", got, want)
	}
	unpublishUnstage(t, rp)
}

// writeDevice writes n random bytes at each offset of a block device file
// and flushes them to the device.
func writeDevice(t *testing.T, path string, seed uint64, offsets []int64, n int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src := newRand(seed)
	buf := make([]byte, n)
	for _, off := range offsets {
		_, _ = src.Read(buf)
		if _, err := f.WriteAt(buf, off); err != nil {
			t.Fatalf("write %s at %d: %v", path, off, err)
		}
	}
	if err := unix.Fsync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
}

// hashDevice returns the sha256 of a whole block device (or file).
func hashDevice(t *testing.T, path string) [32]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum
}
