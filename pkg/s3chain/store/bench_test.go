package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// BenchmarkStore measures Put and Get throughput of 4 MiB objects on the
// file store (tmpfs or disk under TMPDIR, with fsync) and on a local
// versitygw over loopback HTTP.
func BenchmarkStore(b *testing.B) {
	ctx := context.Background()
	open := map[string]func(b *testing.B) store.Store{
		"file": func(b *testing.B) store.Store {
			s, err := store.Open(ctx, "file://"+b.TempDir(), store.Credentials{})
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
		"s3": func(b *testing.B) store.Store {
			srv := testutil.StartS3(b)
			s, err := store.Open(ctx, srv.URL("bench"), creds(srv))
			if err != nil {
				b.Fatal(err)
			}
			return s
		},
	}
	data := make([]byte, 4<<20)
	for i := range data {
		data[i] = byte(i * 7)
	}
	for _, name := range []string{"file", "s3"} {
		b.Run(name, func(b *testing.B) {
			s := open[name](b)
			b.Run("Put4MiB", func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				for i := 0; b.Loop(); i++ {
					if err := s.Put(ctx, fmt.Sprintf("obj/%d", i%8), data); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("Get4MiB", func(b *testing.B) {
				for i := range 8 {
					if err := s.Put(ctx, fmt.Sprintf("obj/%d", i), data); err != nil {
						b.Fatal(err)
					}
				}
				b.SetBytes(int64(len(data)))
				for i := 0; b.Loop(); i++ {
					if _, err := s.Get(ctx, fmt.Sprintf("obj/%d", i%8)); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}
