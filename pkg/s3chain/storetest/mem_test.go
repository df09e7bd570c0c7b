package storetest_test

import (
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

func TestMemSuite(t *testing.T) {
	storetest.RunSuite(t, func(*testing.T) store.Store { return storetest.NewMem() })
}
