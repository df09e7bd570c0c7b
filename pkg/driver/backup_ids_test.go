package driver

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

func TestBackupSnapshotIDRoundTrip(t *testing.T) {
	long := strings.Repeat("n", 63) + "/" + strings.Repeat("p", 36)
	for _, ref := range []target.Ref{
		{Target: "offsite", Chain: "shop/data-db-0", Backup: "20261129T101500Z"},
		{Target: "a-very-long-name", Chain: long, Backup: "20261129T101500Z-12"},
	} {
		id := backupSnapshotID(ref)
		if len(id) > maxCSIIDLen {
			t.Fatalf("id %q is %d bytes, over the CSI limit", id, len(id))
		}
		got, err := parseBackupSnapshotID(id)
		if err != nil {
			t.Fatalf("parse %q: %v", id, err)
		}
		if got.Chain != ref.Chain && got.Chain != hashedMark+chainHash(ref.Chain) {
			t.Fatalf("parse %q: chain %q", id, got.Chain)
		}
		if got.Target != ref.Target || got.Backup != ref.Backup {
			t.Fatalf("parse %q: %+v", id, got)
		}
	}
	if _, err := parseBackupSnapshotID("backup:../../etc"); err == nil {
		t.Fatal("malformed backup id parsed")
	}
}

func TestRestoreRefTemplates(t *testing.T) {
	vr := volumeRequest{params: volumeParams{FromBackup: "offsite:${pvc.namespace}/${pvc.name}@latest",
		PVCNamespace: "shop", PVCName: "data-db-1"}}
	r, err := restoreRef(vr)
	if err != nil || r.String() != "offsite:shop/data-db-1@latest" {
		t.Fatalf("ref %v, %v", r, err)
	}
	vr.params.PVCName = ""
	if _, err := restoreRef(vr); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("template without metadata: %v, want InvalidArgument", err)
	}
	vr = volumeRequest{params: volumeParams{FromBackup: "a:c@latest", BackupTarget: "b"}}
	if _, err := restoreRef(vr); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("conflicting targets: %v", err)
	}
	vr = volumeRequest{params: volumeParams{FromBackup: "c@latest", BackupTarget: "b"}}
	if r, err := restoreRef(vr); err != nil || r.Target != "b" {
		t.Fatalf("backupTarget default: %v %v", r, err)
	}
}

func TestChainName(t *testing.T) {
	for _, tc := range []struct {
		lv   backend.LVol
		want string
	}{
		{backend.LVol{ID: "vol-1", Name: "pvc-1", Labels: map[string]string{labelPVCNamespace: "shop", labelPVCName: "db"}}, "shop/db"},
		{backend.LVol{ID: "vol-1", Name: "pvc-1"}, "pvc-1"},
		{backend.LVol{ID: "vol-1", Name: "a name/with ../odd bytes"}, "a-name-with-..-odd-bytes"},
		{backend.LVol{ID: "vol-1", Name: "///"}, "vol-1"},
	} {
		if got := chainName(tc.lv); got != tc.want {
			t.Errorf("chainName(%q) = %q, want %q", tc.lv.Name, got, tc.want)
		}
	}
}
