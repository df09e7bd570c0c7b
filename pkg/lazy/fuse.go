package lazy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// ImageName is the name of the one file a Server holds.
const ImageName = "image"

// Server is a FUSE filesystem holding one read-only file, ImageName,
// whose bytes are an Image's.
type Server struct {
	srv *fuse.Server
	dir string
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

// serve mounts im at dir with the given options and extra mount(2) flags.
func serve(im *Image, dir string, opts []string, flags uintptr) (*Server, error) {
	root := &rootNode{im: im}
	// The image's size never changes and only this server changes its
	// bytes: the kernel may cache attributes and pages for as long as the
	// mount lives.
	forever := 24 * time.Hour
	srv, err := fs.Mount(dir, root, &fs.Options{
		EntryTimeout: &forever, AttrTimeout: &forever,
		MountOptions: fuse.MountOptions{
			FsName: "chainvol-lazy", Name: "chainvol", Options: opts,
			DirectMount: true, DirectMountStrict: os.Geteuid() == 0, MaxReadAhead: 1 << 20, MaxWrite: 1 << 20, DisableXAttrs: true,
			// Inert at the mount too (mount(2) flags; "ro" above marks
			// only the superblock).
			DirectMountFlags: flags | syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("mount the lazy image at %s (FUSE): %w", dir, err)
	}
	return &Server{srv: srv, dir: dir}, nil
}

// Path is the image file's path.
func (s *Server) Path() string { return filepath.Join(s.dir, ImageName) }

// Unmount unmounts the FUSE filesystem (EBUSY while a loop device still
// holds the file) and waits until its server has stopped.
func (s *Server) Unmount() error {
	if err := s.srv.Unmount(); err != nil {
		return fmt.Errorf("unmount the lazy image at %s: %w", s.dir, err)
	}
	s.srv.Wait()
	return nil
}

// Wait returns when the FUSE filesystem is unmounted, by Unmount or by
// anyone else (umount(8)).
func (s *Server) Wait() { s.srv.Wait() }

// rootNode is the directory holding the image file.
type rootNode struct {
	fs.Inode
	im *Image
}

var _ fs.NodeOnAdder = (*rootNode)(nil)

func (r *rootNode) OnAdd(ctx context.Context) {
	ch := r.NewPersistentInode(ctx, &fileNode{im: r.im}, fs.StableAttr{Mode: syscall.S_IFREG})
	r.AddChild(ImageName, ch, false)
}

// fileNode is the image file, its size the image's: read-only unless the
// image is writable.
type fileNode struct {
	fs.Inode
	im *Image
}

var (
	_ fs.NodeGetattrer = (*fileNode)(nil)
	_ fs.NodeOpener    = (*fileNode)(nil)
	_ fs.NodeReader    = (*fileNode)(nil)
	_ fs.NodeWriter    = (*fileNode)(nil)
	_ fs.NodeFsyncer   = (*fileNode)(nil)
	_ fs.NodeFlusher   = (*fileNode)(nil)
)

func (f *fileNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	if f.im.rw != nil {
		out.Mode |= 0o200
	}
	out.Size = uint64(f.im.SizeBytes())
	out.Blksize = 4096
	out.Blocks = (out.Size + 511) / 512
	return 0
}

func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY && f.im.rw == nil {
		return nil, 0, syscall.EROFS
	}
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

// Read answers a read of the image; a block that cannot be fetched and
// verified is EIO (or EINTR when the kernel interrupted the request),
// never zeros.
func (f *fileNode) Read(ctx context.Context, fh fs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	n, err := f.im.ReadAtContext(ctx, dest, off)
	if err != nil && !errors.Is(err, io.EOF) {
		if ctx.Err() != nil {
			return nil, syscall.EINTR
		}
		logf("read of %d bytes at %d: %v", len(dest), off, err)
		return nil, syscall.EIO
	}
	return fuse.ReadResultData(dest[:n]), 0
}

// Write answers a write of a writable image: EROFS for a read-only one,
// EFBIG past its end, EIO when a block it needed could not be fetched or
// the data file failed.
func (f *fileNode) Write(ctx context.Context, fh fs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	// A write is carried out whole whatever the writer's interruption: a
	// half-done block is only an unmarked one, but one answer is simpler.
	n, err := f.im.WriteAtContext(context.WithoutCancel(ctx), data, off)
	switch {
	case errors.Is(err, ErrReadOnly):
		return 0, syscall.EROFS
	case errors.Is(err, ErrBeyondEnd):
		return 0, syscall.EFBIG
	case err != nil:
		logf("write of %d bytes at %d: %v", len(data), off, err)
		return uint32(n), syscall.EIO
	}
	return uint32(n), 0
}

// Fsync is the image's Flush: the data file's fdatasync, then the
// hydration record. Nothing to do for a read-only image.
func (f *fileNode) Fsync(ctx context.Context, fh fs.FileHandle, flags uint32) syscall.Errno {
	return f.flush("fsync")
}

// Flush (each close(2) of the file) is Fsync: a loop device detached or a
// writer closing the file leaves its writes durable.
func (f *fileNode) Flush(ctx context.Context, fh fs.FileHandle) syscall.Errno {
	return f.flush("flush")
}

func (f *fileNode) flush(op string) syscall.Errno {
	if f.im.rw == nil {
		return 0
	}
	if err := f.im.Flush(); err != nil {
		logf("%s: %v", op, err)
		return syscall.EIO
	}
	return 0
}

// logf reports a failed read on stderr: the reader sees only EIO.
var logf = func(format string, a ...any) { fmt.Fprintf(os.Stderr, "chainvol lazy image: "+format+"\n", a...) }
