package backend

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// CloneInto reflinks the data file of lvol src over that of lvol dst
// (FICLONE: the whole file, O(1) in its size), punches whatever the copy
// holds beyond size bytes (dst's data beyond an image of size bytes must
// read as zeroes), and fsyncs. dst must be unwritten (no block allocated):
// a seeded restore starts from the copy, never from bytes it wrote itself.
// Errors: ErrNotFound (either lvol), ErrInvalid (dst already written), and
// the filesystem's (EOPNOTSUPP or EXDEV without reflink).
func (p *FilePool) CloneInto(src, dst string, size int64) error {
	sp, err := p.DataPath(src)
	if err != nil {
		return err
	}
	dp, err := p.DataPath(dst)
	if err != nil {
		return err
	}
	in, err := os.Open(sp)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dp, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer out.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(out.Fd()), &st); err != nil {
		return err
	}
	if st.Blocks != 0 {
		return fmt.Errorf("%w: the data file of %s is not empty", ErrInvalid, dst) // a restore already wrote to it
	}
	if err := unix.IoctlFileClone(int(out.Fd()), int(in.Fd())); err != nil {
		return err
	}
	fi, err := in.Stat()
	if err != nil {
		return err
	}
	if fi.Size() > size {
		err = unix.Fallocate(int(out.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, size, fi.Size()-size)
		if err != nil {
			return err
		}
	}
	return out.Sync()
}
