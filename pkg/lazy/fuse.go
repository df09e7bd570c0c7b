package lazy

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// ImageName is the name of the one file a Server holds.
const ImageName = "image"

// Server is a FUSE filesystem holding one read-only file, ImageName,
// whose bytes are an Image's.
type Server struct {
	srv    *fuse.Server
	dir    string
	kept   bool      // mounted by ServeKept or taken over: unmount(2) here
	conn   int       // a kept server's connection descriptor (go-fuse's)
	blob   []byte    // a kept server's KeptState JSON
	closer io.Closer // what TakeOver opened for it, closed after Unmount
}

// Serve mounts a FUSE filesystem at dir (an existing empty directory)
// holding im as the read-only file dir/ImageName, and serves it until
// Unmount. It mounts with mount(2) directly (root; fusermount otherwise),
// read-only. Errors: /dev/fuse missing or the mount refused.
func Serve(im *Image, dir string) (*Server, error) {
	if im.rw != nil {
		return nil, fmt.Errorf("serve the lazy image at %s: a writable image is served by ServeWritable", dir)
	}
	return serve(im, dir, []string{"ro"}, syscall.MS_RDONLY)
}

// ServeWritable is Serve for an image made by OpenWritable: dir/ImageName
// opens for writing, a write goes to the image (WriteAtContext) before it
// returns (no writeback cache: every write of the loop device reaches the
// server), and fsync(2) of the file (what a loop device does for its
// filesystem's flushes and FUA writes) is the image's Flush.
func ServeWritable(im *Image, dir string) (*Server, error) {
	if im.rw == nil {
		return nil, fmt.Errorf("serve the lazy image at %s: %w", dir, ErrReadOnly)
	}
	return serve(im, dir, nil, 0)
}

// serve mounts im at dir with the given options and extra mount(2)
// flags, and serves it.
func serve(im *Image, dir string, opts []string, flags uintptr) (*Server, error) {
	mo := mountOptions(opts, flags)
	mo.DirectMount, mo.DirectMountStrict = true, os.Geteuid() == 0
	srv, err := fuse.NewServer(newRawFS(im), dir, &mo)
	if err != nil {
		return nil, fmt.Errorf("mount the lazy image at %s (FUSE): %w", dir, err)
	}
	go srv.Serve()
	if err := srv.WaitMount(); err != nil {
		_ = srv.Unmount()
		return nil, fmt.Errorf("mount the lazy image at %s (FUSE): %w", dir, err)
	}
	return &Server{srv: srv, dir: dir}, nil
}

// mountOptions are the FUSE options of every lazy file: read-ahead and
// writes of up to 1 MiB, no xattrs, inert at the mount (mount(2) flags;
// "ro" in opts marks only the superblock).
func mountOptions(opts []string, flags uintptr) fuse.MountOptions {
	return fuse.MountOptions{
		FsName: "chainvol-lazy", Name: "chainvol", Options: opts,
		MaxReadAhead: 1 << 20, MaxWrite: 1 << 20, DisableXAttrs: true,
		DirectMountFlags: flags | syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC,
	}
}

// Path is the image file's path.
func (s *Server) Path() string { return filepath.Join(s.dir, ImageName) }

// Unmount unmounts the FUSE filesystem (EBUSY while a loop device still
// holds the file) and waits until its server has stopped.
func (s *Server) Unmount() error {
	if err := s.unmount(); err != nil {
		return fmt.Errorf("unmount the lazy image at %s: %w", s.dir, err)
	}
	s.srv.Wait()
	if s.closer != nil {
		return s.closer.Close()
	}
	return nil
}

// unmount unmounts dir; a server over a kept connection (ServeKept,
// TakeOver) was mounted here, not by go-fuse, and is unmounted here too.
// A kept connection whose mount this process cannot see (the mount
// namespace of a dead container) is not mounted: its superblock ends, and
// the server with it, once the loop device over it is detached.
func (s *Server) unmount() error {
	if !s.kept {
		return s.srv.Unmount()
	}
	err := unix.Unmount(s.dir, 0)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return err
}

// Wait returns when the FUSE filesystem is unmounted, by Unmount or by
// anyone else (umount(8)).
func (s *Server) Wait() { s.srv.Wait() }

// logf reports a failed read on stderr: the reader sees only EIO.
var logf = func(format string, a ...any) { fmt.Fprintf(os.Stderr, "chainvol lazy image: "+format+"\n", a...) }
