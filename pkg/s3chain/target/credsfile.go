package target

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// credentialsFile is a credentials file that is read again whenever it
// changes: kubelet updates a Secret volume by writing a new directory and
// swapping the "..data" symlink to it atomically, so a rotated key shows
// up as another file behind the same path. Each use stats the path
// (following symlinks) and re-reads the file when its identity (device,
// inode, size, modification time) differs from the one last read.
type credentialsFile struct {
	path string
	mu   sync.Mutex
	id   fileID
	sec  Secrets
}

// fileID identifies one version of a file.
type fileID struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

// newCredentialsFile reads path once; errors are those of ReadSecretsFile.
func newCredentialsFile(path string) (*credentialsFile, error) {
	f := &credentialsFile{path: path}
	_, err := f.secrets(true)
	return f, err
}

// secrets returns the file's credentials, read again if the file changed
// or force is set. An unreadable or malformed file is an error (wrapping
// ErrBadSecret or the os error), never silently the old credentials; the
// next call tries again.
func (f *credentialsFile) secrets(force bool) (Secrets, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Stat before reading: a swap in between leaves a stale identity with
	// the new contents, which only costs one more read next time.
	id, err := statID(f.path)
	if err != nil {
		return Secrets{}, fmt.Errorf("credentials file: %w", err)
	}
	if !force && id == f.id {
		return f.sec, nil
	}
	sec, err := ReadSecretsFile(f.path)
	if err != nil {
		f.id = fileID{}
		return Secrets{}, err
	}
	f.id, f.sec = id, sec
	return sec, nil
}

func statID(path string) (fileID, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return fileID{}, err
	}
	id := fileID{size: fi.Size(), mtime: fi.ModTime()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		id.dev, id.ino = uint64(st.Dev), st.Ino
	}
	return id, nil
}
