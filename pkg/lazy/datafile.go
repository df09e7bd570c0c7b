package lazy

import (
	"context"
	"fmt"
	"io"
	"os"
)

// dataFile serves a volume's data file as it is: the Served of a kept
// connection taken over after its volume's hydration ended (every block is
// in the file), for as long as it stays staged over the FUSE file.
type dataFile struct {
	f    *os.File
	size int64 // the image's, which the FUSE file keeps: the backup's
}

func (d *dataFile) SizeBytes() int64 { return d.size }
func (d *dataFile) Writable() bool   { return true }
func (d *dataFile) Flush() error     { return fdatasync(int(d.f.Fd())) }
func (d *dataFile) Close() error     { return d.f.Close() }

func (d *dataFile) ReadAtContext(_ context.Context, p []byte, off int64) (int, error) {
	if off >= d.size {
		return 0, io.EOF
	}
	short := int64(len(p)) > d.size-off
	if short {
		p = p[:d.size-off]
	}
	n, err := d.f.ReadAt(p, off)
	if err == nil && short {
		err = io.EOF
	}
	return n, err
}

func (d *dataFile) WriteAtContext(_ context.Context, p []byte, off int64) (int, error) {
	if off < 0 || int64(len(p)) > d.size-off {
		return 0, fmt.Errorf("%w: %d bytes at %d, size %d", ErrBeyondEnd, len(p), off, d.size)
	}
	return d.f.WriteAt(p, off)
}

// TakeOverFile is TakeOver serving the data file at dataPath itself, of
// the size the connection was kept with: its volume has hydrated. The
// server closes the file after Unmount. Errors: the file's, ErrTakeOver.
func TakeOverFile(dataPath string, f *os.File, blob []byte, dir string) (*Server, error) {
	st, err := parseKept(blob, dir)
	if err != nil {
		return nil, err
	}
	df, err := os.OpenFile(dataPath, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	d := &dataFile{f: df, size: st.SizeBytes}
	srv, err := TakeOver(d, f, blob, dir)
	if err != nil {
		df.Close()
		return nil, err
	}
	srv.closer = d
	return srv, nil
}
