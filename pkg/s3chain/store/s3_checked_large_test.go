package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// TestS3SelfCheckedPutLarge : a block object over minio-go's
// 16 MiB part size (chains may use blocks up to s3chain.MaxBlockSize,
// 64 MiB) is sent as a multipart upload; with SelfChecked it carries a
// whole-object x-amz-checksum-crc32c in the metadata of every request of
// that upload. It must still be stored byte for byte.
func TestS3SelfCheckedPutLarge(t *testing.T) {
	ctx := context.Background()
	srv := testutil.StartS3(t)
	st, err := store.Open(ctx, srv.URL("c"), store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{16 << 20, 16<<20 + 1, 40<<20 + 17} {
		data := make([]byte, n)
		_, _ = rand.Read(data)
		if err := st.Put(ctx, "blocks/plain", data); err != nil {
			t.Fatalf("control: plain put of %d bytes: %v", n, err)
		}
		if err := st.Put(store.SelfChecked(ctx), "blocks/big", data); err != nil {
			t.Errorf("SelfChecked put of %d bytes: %v", n, err)
			continue
		}
		got, err := st.Get(ctx, "blocks/big")
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("get of the %d bytes put: %d bytes, %v", n, len(got), err)
		}
	}
}
