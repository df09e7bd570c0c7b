package volume

import (
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

func TestBackupSnapshotIDRoundTrip(t *testing.T) {
	long := strings.Repeat("n", 63) + "/" + strings.Repeat("p", 36)
	for _, ref := range []target.Ref{
		{Target: "offsite", Chain: "shop/data-db-0", Backup: "20261129T101500Z"},
		{Target: "a-very-long-name", Chain: long, Backup: "20261129T101500Z-12"},
	} {
		id := BackupID(ref)
		if len(id) > MaxIDLen {
			t.Fatalf("id %q is %d bytes, over the CSI limit", id, len(id))
		}
		got, err := ParseBackupID(id)
		if err != nil {
			t.Fatalf("parse %q: %v", id, err)
		}
		if !SameChain(got, ref.Target, ref.Chain) {
			t.Fatalf("parse %q: chain %q", id, got.Chain)
		}
		if got.Target != ref.Target || got.Backup != ref.Backup {
			t.Fatalf("parse %q: %+v", id, got)
		}
	}
	if _, err := ParseBackupID("backup:../../etc"); err == nil {
		t.Fatal("malformed backup id parsed")
	}
}
