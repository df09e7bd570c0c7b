package lazy

import (
	"context"
	"errors"
	"io"
	"syscall"
	"time"

	"github.com/hanwen/go-fuse/v2/fuse"
)

// Served is what a FUSE file serves: an Image, or (a takeover of a volume
// whose hydration has ended, TakeOver) its data file. Sizes and offsets
// are bytes; the size never changes while it is served.
type Served interface {
	SizeBytes() int64
	// ReadAtContext returns len(p) bytes at off, fewer with io.EOF at the
	// end; an error otherwise (never zeros in place of missing bytes).
	ReadAtContext(ctx context.Context, p []byte, off int64) (int, error)
	// WriteAtContext writes p at off: ErrReadOnly, ErrBeyondEnd.
	WriteAtContext(ctx context.Context, p []byte, off int64) (int, error)
	// Flush makes every write that returned durable.
	Flush() error
	// Writable reports whether writes are taken.
	Writable() bool
}

// Node ids of the one directory and its one file. They are fixed, never
// allocated: a server that takes a connection over from a dead one
// (TakeOver) answers the node ids the kernel already holds, and no LOOKUP
// comes again to tell it new ones.
const (
	rootID  = fuse.FUSE_ROOT_ID
	imageID = 2
)

// forever is how long the kernel may keep entries, attributes and pages:
// the file's size never changes and only its server changes its bytes.
const forever = 24 * time.Hour

// rawFS is the FUSE filesystem of one Served as the file ImageName,
// answering the kernel's requests itself (go-fuse's RawFileSystem, not
// its node bridge, whose node ids depend on the order of lookups).
type rawFS struct {
	fuse.RawFileSystem // ENOSYS for every request not answered here
	b                  Served
}

func newRawFS(b Served) *rawFS {
	return &rawFS{RawFileSystem: fuse.NewDefaultRawFileSystem(), b: b}
}

func (r *rawFS) String() string { return "chainvol-lazy" }

func (r *rawFS) Lookup(cancel <-chan struct{}, h *fuse.InHeader, name string, out *fuse.EntryOut) fuse.Status {
	if h.NodeId != rootID || name != ImageName {
		return fuse.ENOENT
	}
	r.entry(out)
	return fuse.OK
}

// entry fills the file's entry: its fixed node id and its attributes,
// both kept for as long as the mount lives.
func (r *rawFS) entry(out *fuse.EntryOut) {
	out.NodeId, out.Generation = imageID, 1
	out.SetEntryTimeout(forever)
	out.SetAttrTimeout(forever)
	r.attr(imageID, &out.Attr)
}

func (r *rawFS) GetAttr(cancel <-chan struct{}, in *fuse.GetAttrIn, out *fuse.AttrOut) fuse.Status {
	if in.NodeId != rootID && in.NodeId != imageID {
		return fuse.ENOENT
	}
	out.SetTimeout(forever)
	r.attr(in.NodeId, &out.Attr)
	return fuse.OK
}

// attr fills the attributes of node id: a directory 0555, or the file,
// 0444 (0644 when writable) of the Served's size.
func (r *rawFS) attr(id uint64, a *fuse.Attr) {
	a.Ino, a.Nlink = id, 1
	if id == rootID {
		a.Mode, a.Nlink = syscall.S_IFDIR|0o555, 2
		return
	}
	a.Mode = syscall.S_IFREG | 0o444
	if r.b.Writable() {
		a.Mode |= 0o200
	}
	a.Size = uint64(r.b.SizeBytes())
	a.Blksize = 4096
	a.Blocks = (a.Size + 511) / 512
}

func (r *rawFS) Open(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if in.NodeId != imageID {
		return fuse.EISDIR
	}
	if in.Flags&syscall.O_ACCMODE != syscall.O_RDONLY && !r.b.Writable() {
		return fuse.EROFS
	}
	out.OpenFlags = fuse.FOPEN_KEEP_CACHE
	return fuse.OK
}

// Read answers a read of the file; a block that cannot be fetched and
// verified is EIO (or EINTR when the kernel interrupted the request),
// never zeros.
func (r *rawFS) Read(cancel <-chan struct{}, in *fuse.ReadIn, buf []byte) (fuse.ReadResult, fuse.Status) {
	if in.NodeId != imageID {
		return nil, fuse.EISDIR
	}
	ctx := &fuse.Context{Cancel: cancel}
	n, err := r.b.ReadAtContext(ctx, buf[:in.Size], int64(in.Offset))
	if err != nil && !errors.Is(err, io.EOF) {
		if ctx.Err() != nil {
			return nil, fuse.EINTR
		}
		logf("read of %d bytes at %d: %v", in.Size, in.Offset, err)
		return nil, fuse.EIO
	}
	return fuse.ReadResultData(buf[:n]), fuse.OK
}

// Write answers a write: EROFS for a read-only Served, EFBIG past its
// end, EIO when a block it needed could not be fetched or the data file
// failed. A write is carried out whole whatever the writer's interruption:
// a half-done block is only an unmarked one, but one answer is simpler.
func (r *rawFS) Write(cancel <-chan struct{}, in *fuse.WriteIn, data []byte) (uint32, fuse.Status) {
	n, err := r.b.WriteAtContext(context.Background(), data, int64(in.Offset))
	switch {
	case errors.Is(err, ErrReadOnly):
		return 0, fuse.EROFS
	case errors.Is(err, ErrBeyondEnd):
		return 0, fuse.Status(syscall.EFBIG)
	case err != nil:
		logf("write of %d bytes at %d: %v", len(data), in.Offset, err)
		return uint32(n), fuse.EIO
	}
	return uint32(n), fuse.OK
}

// Fsync is the Served's Flush (for an image: the data file's fdatasync,
// then the hydration record); what a loop device does for its
// filesystem's flushes and FUA writes.
func (r *rawFS) Fsync(cancel <-chan struct{}, in *fuse.FsyncIn) fuse.Status {
	return r.flush("fsync")
}

// Flush (each close(2) of the file) is Fsync: a loop device detached or a
// writer closing the file leaves its writes durable.
func (r *rawFS) Flush(cancel <-chan struct{}, in *fuse.FlushIn) fuse.Status {
	return r.flush("flush")
}

func (r *rawFS) flush(op string) fuse.Status {
	if !r.b.Writable() {
		return fuse.OK
	}
	if err := r.b.Flush(); err != nil {
		logf("%s: %v", op, err)
		return fuse.EIO
	}
	return fuse.OK
}

func (r *rawFS) Release(cancel <-chan struct{}, in *fuse.ReleaseIn) {}

func (r *rawFS) Access(cancel <-chan struct{}, in *fuse.AccessIn) fuse.Status { return fuse.OK }

func (r *rawFS) OpenDir(cancel <-chan struct{}, in *fuse.OpenIn, out *fuse.OpenOut) fuse.Status {
	if in.NodeId != rootID {
		return fuse.ENOTDIR
	}
	return fuse.OK
}

func (r *rawFS) ReleaseDir(in *fuse.ReleaseIn) {}

// entries are the directory's: ".", ".." and the file.
var entries = []fuse.DirEntry{
	{Name: ".", Mode: syscall.S_IFDIR, Ino: rootID, Off: 1},
	{Name: "..", Mode: syscall.S_IFDIR, Ino: rootID, Off: 2},
	{Name: ImageName, Mode: syscall.S_IFREG, Ino: imageID, Off: 3},
}

func (r *rawFS) ReadDir(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	for _, e := range entries[min(in.Offset, uint64(len(entries))):] {
		if !out.AddDirEntry(e) {
			break
		}
	}
	return fuse.OK
}

// ReadDirPlus lists as ReadDir does, with the file's entry: the kernel
// takes a lookup of it, as of a LOOKUP (. and .. are not looked up).
func (r *rawFS) ReadDirPlus(cancel <-chan struct{}, in *fuse.ReadIn, out *fuse.DirEntryList) fuse.Status {
	for _, e := range entries[min(in.Offset, uint64(len(entries))):] {
		eo := out.AddDirLookupEntry(e)
		if eo == nil {
			break
		}
		if e.Ino == imageID {
			r.entry(eo)
		}
	}
	return fuse.OK
}

func (r *rawFS) StatFs(cancel <-chan struct{}, in *fuse.InHeader, out *fuse.StatfsOut) fuse.Status {
	out.Bsize, out.Frsize, out.NameLen = 4096, 4096, 255
	out.Blocks = uint64(r.b.SizeBytes()+4095) / 4096
	out.Files = 1
	return fuse.OK
}
