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
	root := &rootNode{im: im}
	// The image never changes: the kernel may cache attributes and pages
	// for as long as the mount lives.
	forever := 24 * time.Hour
	srv, err := fs.Mount(dir, root, &fs.Options{
		EntryTimeout: &forever, AttrTimeout: &forever,
		MountOptions: fuse.MountOptions{
			FsName: "chainvol-lazy", Name: "chainvol", Options: []string{"ro"},
			DirectMount: true, DirectMountStrict: os.Geteuid() == 0, MaxReadAhead: 1 << 20, MaxWrite: 1 << 20, DisableXAttrs: true,
			// Read-only and inert at the mount too (mount(2) flags; "ro"
			// above marks only the superblock).
			DirectMountFlags: syscall.MS_RDONLY | syscall.MS_NOSUID | syscall.MS_NODEV | syscall.MS_NOEXEC,
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

// fileNode is the image file: read-only, its size the image's.
type fileNode struct {
	fs.Inode
	im *Image
}

var (
	_ fs.NodeGetattrer = (*fileNode)(nil)
	_ fs.NodeOpener    = (*fileNode)(nil)
	_ fs.NodeReader    = (*fileNode)(nil)
)

func (f *fileNode) Getattr(ctx context.Context, fh fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(f.im.SizeBytes())
	out.Blksize = 4096
	out.Blocks = (out.Size + 511) / 512
	return 0
}

func (f *fileNode) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
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

// logf reports a failed read on stderr: the reader sees only EIO.
var logf = func(format string, a ...any) { fmt.Fprintf(os.Stderr, "chainvol lazy image: "+format+"\n", a...) }
