package store_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// TestS3GetMaxInto: reading an object into the caller's buffer on a real
// S3 server returns its bytes in that buffer; an object larger than the
// buffer is still read whole (fresh memory); one above the bound is
// ErrObjectTooLarge and a missing one ErrObjectNotFound, as GetMax.
func TestS3GetMaxInto(t *testing.T) {
	srv := testutil.StartS3(t)
	ctx := context.Background()
	st, err := store.Open(ctx, srv.URL("into"), store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	if err := st.Put(ctx, "k", data); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 80<<10)
	got, err := store.GetMaxInto(ctx, st, "k", 1<<20, buf)
	if err != nil || !bytes.Equal(got, data) || &got[0] != &buf[0] {
		t.Errorf("into a large enough buffer: %d bytes, %v, in the buffer %v", len(got), err, len(got) > 0 && &got[0] == &buf[0])
	}
	got, err = store.GetMaxInto(ctx, st, "k", 1<<20, buf[:0:1024])
	if err != nil || !bytes.Equal(got, data) {
		t.Errorf("into a small buffer: %d bytes, %v", len(got), err)
	}
	if _, err := store.GetMaxInto(ctx, st, "k", 1000, buf); !errors.Is(err, store.ErrObjectTooLarge) {
		t.Errorf("above the bound: %v, want ErrObjectTooLarge", err)
	}
	if _, err := store.GetMaxInto(ctx, st, "nope", 1000, buf); !errors.Is(err, store.ErrObjectNotFound) {
		t.Errorf("missing: %v, want ErrObjectNotFound", err)
	}
}
