package fdkeep

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"
)

func startKeeper(t *testing.T) (Client, *Keeper) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "keeper.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k := &Keeper{}
	done := make(chan error, 1)
	go func() { done <- k.Serve(ctx, l) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		k.Close()
	})
	return Client{Path: path}, k
}

// A descriptor put and then taken back is the same open file: what is
// written to the pipe through the original is read through the copy,
// after the putter closed its own descriptor (a dead driver's).
func TestKeeperPutGetSameFile(t *testing.T) {
	c, _ := startKeeper(t)
	ctx := context.Background()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := c.Put(ctx, "vol-1", int(r.Fd()), []byte("init")); err != nil {
		t.Fatal(err)
	}
	r.Close() // the putter dies; the keeper's copy keeps the pipe's read end
	if _, err := w.Write([]byte("hello")); err != nil {
		t.Fatalf("write to a pipe whose only read end is kept: %v", err)
	}
	f, blob, err := c.Get(ctx, "vol-1")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if string(blob) != "init" {
		t.Fatalf("blob %q, want %q", blob, "init")
	}
	got := make([]byte, 5)
	if _, err := f.Read(got); err != nil || string(got) != "hello" {
		t.Fatalf("read through the taken descriptor: %q, %v", got, err)
	}
}

// Keys lists what is kept; a put under a key replaces (and closes) the
// older descriptor; drop closes it; a get of a key never put or dropped is
// ErrNotKept.
func TestKeeperReplaceDropKeys(t *testing.T) {
	c, k := startKeeper(t)
	ctx := context.Background()
	r1, w1, _ := os.Pipe()
	r2, w2, _ := os.Pipe()
	defer w1.Close()
	defer w2.Close()
	for _, kv := range []struct {
		key string
		f   *os.File
	}{{"b", r1}, {"a", r2}, {"b", r2}} {
		if err := c.Put(ctx, kv.key, int(kv.f.Fd()), nil); err != nil {
			t.Fatal(err)
		}
	}
	r1.Close()
	r2.Close()
	keys, err := c.Keys(ctx)
	if err != nil || !reflect.DeepEqual(keys, []string{"a", "b"}) {
		t.Fatalf("keys %v, %v; want [a b]", keys, err)
	}
	// r1's only reader left is gone: the replaced descriptor was closed.
	if _, err := w1.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write to the replaced pipe: %v, want EPIPE", err)
	}
	if err := c.Drop(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := c.Drop(ctx, "never"); err != nil {
		t.Fatalf("drop of nothing: %v", err)
	}
	if _, _, err := c.Get(ctx, "a"); !errors.Is(err, ErrNotKept) {
		t.Fatalf("get after drop: %v, want ErrNotKept", err)
	}
	if _, err := w2.Write([]byte("x")); err != nil {
		t.Fatalf("r2 is still kept under b: %v", err)
	}
	k.Close()
	if _, err := w2.Write([]byte("x")); !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("after Close: %v, want EPIPE", err)
	}
}

// A keeper that is not there is an error a caller can name, not a hang.
func TestKeeperAbsent(t *testing.T) {
	c := Client{Path: filepath.Join(t.TempDir(), "none.sock")}
	if _, _, err := c.Get(context.Background(), "x"); err == nil || errors.Is(err, ErrNotKept) {
		t.Fatalf("get from no keeper: %v", err)
	}
}
