package volume

import (
	"slices"
	"testing"

	"github.com/chainvol/chainvol/pkg/backupid"
	"github.com/chainvol/chainvol/pkg/retention"
)

// TestRetainedBackups: the backups of one chain whose records carry a
// retention policy, from a restarted Manager: single backups (by the
// chain's name or its hashed form), and every member of a group with a
// policy naming its group and all members; a backup without a policy, of
// another chain or of another target, is none of them.
func TestRetainedBackups(t *testing.T) {
	pool, state := testPool(t), t.TempDir()
	m := NewManager(pool, Config{StateDir: state})
	p := &retention.Policy{Last: 2}
	hashed := "backup:t:" + backupid.HashedMark + backupid.ChainHash("ns/c") + "@3"
	for _, r := range []BackupName{
		{Name: "s1", SnapshotID: "backup:t:ns/c@1", Retention: p},
		{Name: "s2", SnapshotID: "backup:t:ns/c@2"},
		{Name: "s3", SnapshotID: hashed, Retention: p},
		{Name: "s4", SnapshotID: "backup:t:ns/d@4", Retention: p},
		{Name: "s5", SnapshotID: "backup:u:ns/c@5", Retention: p},
	} {
		if err := m.RecordBackupName(r); err != nil {
			t.Fatal(err)
		}
	}
	members := []BackupName{{SnapshotID: "backup:t:ns/c@6"}, {SnapshotID: "backup:t:ns/d@6"}}
	if err := m.RecordBackupGroup(BackupName{Name: "g", GroupID: "g-1", Members: members, Retention: p}); err != nil {
		t.Fatal(err)
	}
	if err := m.RecordBackupGroup(BackupName{Name: "g0", GroupID: "g-0", Members: []BackupName{{SnapshotID: "backup:t:ns/c@7"}}}); err != nil {
		t.Fatal(err)
	}
	got, err := NewManager(pool, Config{StateDir: state}).RetainedBackups("t", "ns/c")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.Backup)
		if r.Policy != *p {
			t.Errorf("%s: policy %+v, want %+v", r.SnapshotID, r.Policy, *p)
		}
		if r.Backup == "6" && (r.Group != "g" || !slices.Equal(r.Members, []string{"backup:t:ns/c@6", "backup:t:ns/d@6"})) {
			t.Errorf("group member %+v: want group g with both members", r)
		}
	}
	slices.Sort(ids)
	if want := []string{"1", "3", "6"}; !slices.Equal(ids, want) {
		t.Errorf("retained backups of t:ns/c %v, want %v", ids, want)
	}
}
