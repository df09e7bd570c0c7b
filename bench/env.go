package main

import (
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

// env is the scratch world of one run: a temporary directory, the reflink
// XFS pool on a loop device inside it, and an undo stack that tears down
// whatever was set up, newest first.
type env struct {
	root    string // the repository root (bin/ lives here)
	tmp     string // everything the run creates lives under here
	pool    string // the mounted XFS pool
	poolDev string

	mu   sync.Mutex
	undo []func()
}

// defer_ registers fn to run at teardown, before everything registered earlier.
func (e *env) defer_(fn func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.undo = append(e.undo, fn)
}

// teardown runs the undo stack once; it is safe to call from a signal handler
// goroutine and from main's defer.
func (e *env) teardown() {
	e.mu.Lock()
	undo := e.undo
	e.undo = nil
	e.mu.Unlock()
	for i := len(undo) - 1; i >= 0; i-- {
		undo[i]()
	}
}

// newEnv makes the temporary directory and the pool: a sparse image of
// poolSize bytes formatted XFS with reflink on a loop device.
func newEnv(root, tmpParent string, poolSize int64) (*env, error) {
	tmp, err := os.MkdirTemp(tmpParent, "chainvol-bench.")
	if err != nil {
		return nil, err
	}
	e := &env{root: root, tmp: tmp, pool: filepath.Join(tmp, "pool")}
	e.defer_(func() { os.RemoveAll(tmp) })
	// Mounts the driver left under tmp (stage/publish paths) go first.
	e.defer_(func() { e.unmountUnder(tmp) })
	img := filepath.Join(tmp, "pool.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		return e, err
	}
	if err := os.Truncate(img, poolSize); err != nil {
		return e, err
	}
	out, err := run("losetup", "--find", "--show", img)
	if err != nil {
		return e, err
	}
	e.poolDev = strings.TrimSpace(out)
	e.defer_(func() { _, _ = run("losetup", "-d", e.poolDev) })
	if _, err := run("mkfs.xfs", "-q", "-f", "-m", "reflink=1", e.poolDev); err != nil {
		return e, err
	}
	if err := os.MkdirAll(e.pool, 0o700); err != nil {
		return e, err
	}
	if _, err := run("mount", e.poolDev, e.pool); err != nil {
		return e, err
	}
	e.defer_(func() {
		e.detachLoopsUnder(e.pool)
		if _, err := run("umount", e.pool); err != nil {
			_, _ = run("umount", "-l", e.pool)
		}
	})
	return e, nil
}

// unmountUnder lazily unmounts every mount below dir, deepest first: what
// the driver could not unpublish or unstage because the run died.
func (e *env) unmountUnder(dir string) {
	out, _ := run("findmnt", "-rn", "-o", "TARGET")
	var ms []string
	for _, m := range strings.Split(out, "\n") {
		if strings.HasPrefix(m, dir+"/") && m != e.pool {
			ms = append(ms, m)
		}
	}
	for i := len(ms) - 1; i >= 0; i-- {
		_, _ = run("umount", "-l", ms[i])
	}
}

// detachLoopsUnder detaches loop devices whose backing file is in dir (the
// driver's volumes, if it died without unstaging them).
func (e *env) detachLoopsUnder(dir string) {
	out, _ := run("losetup", "-l", "-n", "-O", "NAME,BACK-FILE")
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 && strings.HasPrefix(f[1], dir+"/") {
			_, _ = run("losetup", "-d", f[0])
		}
	}
}

// bin is the path of a binary built into the repository's bin/.
func (e *env) bin(name string) string { return filepath.Join(e.root, "bin", name) }

// run runs a short command and returns its stdout; the error carries its
// stderr, which is what explains a failed mkfs or losetup.
func run(name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// logf prints a progress line on stderr, so stdout keeps only the table.
func logf(format string, args ...any) { log.Printf(format, args...) }
