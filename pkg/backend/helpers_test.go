package backend

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"testing"
)

// openPool opens a pool in dir and closes it when the test ends.
func openPool(t testing.TB, dir string, opts ...Option) *FilePool {
	t.Helper()
	p, err := Open(dir, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// mustCreate creates an lvol and fails the test on error.
func mustCreate(t testing.TB, p Pool, o CreateOptions) LVol {
	t.Helper()
	v, err := p.Create(context.Background(), o)
	if err != nil {
		t.Fatalf("Create(%+v): %v", o, err)
	}
	return v
}

// wantErr fails the test unless errors.Is(err, want).
func wantErr(t testing.TB, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("%s: got error %v, want %v", what, err, want)
	}
}

// writeRandom writes n random bytes at off into path and fsyncs them.
func writeRandom(t testing.TB, path string, off, n int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(io.NewOffsetWriter(f, off), io.LimitReader(rand.Reader, n)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

// fileSHA returns the hex sha256 of the first n bytes of path (n < 0: all).
func fileSHA(t testing.TB, path string, n int64) string {
	t.Helper()
	s, err := shaOf(path, n)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func shaOf(path string, n int64) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	var r io.Reader = f
	if n >= 0 {
		r = io.LimitReader(f, n)
	}
	h := sha256.New()
	got, err := io.CopyBuffer(h, r, make([]byte, 1<<20))
	if err != nil {
		return "", err
	}
	if n >= 0 && got != n {
		return "", io.ErrUnexpectedEOF
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// zeroSHA is the hex sha256 of n zero bytes.
func zeroSHA(n int64) string {
	h := sha256.New()
	_, _ = io.Copy(h, io.LimitReader(zeroReader{}, n))
	return hex.EncodeToString(h.Sum(nil))
}

type zeroReader struct{}

func (zeroReader) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// fileSize returns the apparent size of path in bytes.
func fileSize(t testing.TB, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
