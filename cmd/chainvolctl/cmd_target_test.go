package main

import (
	"context"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// overwriting is a store that claims conditional writes but overwrites,
// like a server that ignores If-None-Match behind a store that trusts it.
type overwriting struct{ *storetest.Mem }

func (o overwriting) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return o.Put(ctx, key, data)
}

// target check tells supported, fallback and broken conditional writes
// apart, and leaves no probe object behind.
func TestCheckConditional(t *testing.T) {
	for _, tc := range []struct {
		name    string
		wrap    func(*storetest.Mem) store.Store
		want    bool
		wantErr string
	}{
		{"supported", func(m *storetest.Mem) store.Store { return m }, true, ""},
		{"fallback", func(m *storetest.Mem) store.Store { return storetest.NewFaulty(m).WithoutConditionalWrites() }, false, ""},
		{"overwrites", func(m *storetest.Mem) store.Store { return overwriting{m} }, false, "overwrote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := storetest.NewMem()
			got, err := checkConditional(context.Background(), tc.wrap(mem), "chk/k", []byte("probe"))
			if got != tc.want || (tc.wantErr == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("checkConditional = %v, %v; want %v, error containing %q", got, err, tc.want, tc.wantErr)
			}
			if mem.Len() != 0 {
				t.Fatalf("%d probe objects left", mem.Len())
			}
		})
	}
}
