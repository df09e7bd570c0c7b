package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// A SelfChecked Put (a block object) goes without a payload signature and
// with an x-amz-checksum-crc32c the server checks: versitygw stores the
// object byte for byte with that checksum, and refuses the PUT when the
// bytes do not match it, so damage on the way fails the backup's PUT.
func TestS3SelfCheckedPut(t *testing.T) {
	ctx := context.Background()
	srv, st := checkedStore(t)
	data := make([]byte, 3<<20+17)
	_, _ = rand.Read(data)
	for _, key := range []string{"blocks/a", "blocks/empty"} {
		body := data
		if key == "blocks/empty" {
			body = nil
		}
		if err := st.Put(store.SelfChecked(ctx), key, body); err != nil {
			t.Fatalf("put %s: %v", key, err)
		}
		got, err := st.Get(ctx, key)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("get %s: %d bytes, %v; want the %d put", key, len(got), err, len(body))
		}
	}
	raw, err := minio.New(srv.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, ""),
		Region: "us-east-1", TrailingHeaders: true})
	if err != nil {
		t.Fatal(err)
	}
	info, err := raw.StatObject(ctx, srv.Bucket, "c/blocks/a", minio.StatObjectOptions{Checksum: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := crc32c(data); info.ChecksumCRC32C != want {
		t.Fatalf("stored CRC32C %q, want %q: the PUT did not carry the checksum", info.ChecksumCRC32C, want)
	}
	// The same request with one byte changed on the way: refused.
	bad := bytes.Clone(data)
	bad[12345] ^= 1
	_, err = raw.PutObject(ctx, srv.Bucket, "c/blocks/b", bytes.NewReader(bad), int64(len(bad)), minio.PutObjectOptions{
		DisableContentSha256: true, UserMetadata: map[string]string{"x-amz-checksum-crc32c": crc32c(data)}})
	if err == nil {
		t.Fatal("a PUT whose bytes do not match its x-amz-checksum-crc32c was stored")
	}
	if _, err := st.Stat(ctx, "blocks/b"); err == nil {
		t.Fatal("the refused object exists")
	}
}

func crc32c(b []byte) string {
	var sum [4]byte
	binary.BigEndian.PutUint32(sum[:], crc32.Checksum(b, crc32.MakeTable(crc32.Castagnoli)))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// TestS3SelfCheckedPutLarge: a block object over minio-go's 16 MiB part
// size (chains may use blocks up to s3chain.MaxBlockSize, 64 MiB) is still
// one PUT with SelfChecked, since the whole-object x-amz-checksum-crc32c
// does not fit a multipart upload (versitygw refused its completion), and
// is stored byte for byte.
func TestS3SelfCheckedPutLarge(t *testing.T) {
	ctx := context.Background()
	_, st := checkedStore(t)
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

// checkedStore starts versitygw and opens a store on bucket c of it.
func checkedStore(t *testing.T) (testutil.S3Server, store.Store) {
	t.Helper()
	srv := testutil.StartS3(t)
	st, err := store.Open(context.Background(), srv.URL("c"), store.Credentials{AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey})
	if err != nil {
		t.Fatal(err)
	}
	return srv, st
}
