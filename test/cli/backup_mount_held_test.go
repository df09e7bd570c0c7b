package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chainvol/chainvol/internal/testutil"
)

// TestBackupMountHeldOpen: SIGTERM while a reader holds a file of the
// mount open ends the command within its busy wait (the mount is detached
// lazily), and once the reader lets go nothing is left mounted or attached.
func TestBackupMountHeldOpen(t *testing.T) {
	testutil.RequireFUSE(t)
	e := newRestoreEnv(t)
	m := e.startMount(t, "s3:lab/x@latest")
	f, err := os.Open(filepath.Join(m.dir, "sub", "filea"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(f, make([]byte, 100)); err != nil {
		t.Fatal(err)
	}
	if err := m.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = m.cmd.Wait()
	took := time.Since(start)
	t.Logf("ended after %v: %v\nstdout: %s\nstderr: %s", took, err, m.stdout.String(), m.stderr.String())
	// Exit 1 (a reader was cut), saying so, within the one 10 s busy wait.
	if err == nil || took > 18*time.Second || !strings.Contains(m.stderr.String(), "detached lazily") {
		t.Errorf("SIGTERM with a file held open: %v after %v", err, took)
	}
	f.Close()
	time.Sleep(2 * time.Second)
	checkNothingLeft(t, m.dir)
}
