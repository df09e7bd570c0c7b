package storetest_test

import (
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

func TestMemSuite(t *testing.T) {
	storetest.RunSuite(t, func(*testing.T) store.Store { return storetest.NewMem() })
}

// An Object Lock store is still a store by every rule of the suite (which
// writes nothing with retention).
func TestLockedMemSuite(t *testing.T) {
	storetest.RunSuite(t, func(t *testing.T) store.Store { return storetest.NewLockedMem(store.LockPolicy{}) })
}
