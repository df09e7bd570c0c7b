package backend

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// probeReflink tries FICLONE between two small files in dir and reports
// whether it worked, or why not. The files are removed; if the process dies
// first, the next Open's recovery removes them with the rest of tmp/.
func probeReflink(dir string) (ok bool, reason string) {
	srcPath := filepath.Join(dir, "reflink-probe-src")
	dstPath := filepath.Join(dir, "reflink-probe-dst")
	defer os.Remove(srcPath)
	defer os.Remove(dstPath)
	src, err := os.Create(srcPath)
	if err != nil {
		return false, err.Error()
	}
	defer src.Close()
	if _, err := src.Write(make([]byte, 4096)); err != nil {
		return false, err.Error()
	}
	dst, err := os.Create(dstPath)
	if err != nil {
		return false, err.Error()
	}
	defer dst.Close()
	if err := unix.IoctlFileClone(int(dst.Fd()), int(src.Fd())); err != nil {
		return false, "FICLONE: " + err.Error()
	}
	return true, ""
}
