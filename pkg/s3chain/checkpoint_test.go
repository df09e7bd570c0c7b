package s3chain

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCheckpointPeriodicFlushClaimed checks the periodic flush of a
// restore checkpoint: none while another is claimed or before the interval,
// one once due, which marks every block written before it done, and an
// interval of at least a second after it.
func TestCheckpointPeriodicFlushClaimed(t *testing.T) {
	dir := t.TempDir()
	dest, err := os.Create(filepath.Join(dir, "dest"))
	if err != nil {
		t.Fatal(err)
	}
	defer dest.Close()
	path := filepath.Join(dir, "ckpt")
	c := loadCheckpoint(path, dest, checkpointID{Version: checkpointVersion, Chain: "c"}, 16, true)
	c.lastFlush = time.Now().Add(-time.Hour)

	c.flushing = true // another worker's flush is running
	c.markWritten(0)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a second periodic flush ran while one was claimed (stat: %v)", err)
	}
	c.flushing = false
	c.interval = 2 * time.Hour
	c.markWritten(1)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a periodic flush ran before its interval (stat: %v)", err)
	}
	c.interval = time.Second
	c.markWritten(2)
	cf, ok := readCheckpoint(path)
	if !ok {
		t.Fatal("no checkpoint written once a flush was due")
	}
	if cf.Done[0] != 0b111 {
		t.Fatalf("done bitmap %08b after the flush, want blocks 0-2", cf.Done[0])
	}
	if c.flushing || c.interval < time.Second {
		t.Fatalf("after the flush: flushing %v, interval %v", c.flushing, c.interval)
	}
}
