package volume

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestBackupNames: a backup snapshot name's record survives the Manager
// (a driver restart); a new record of the name replaces the old;
// ForgetBackup removes only records naming its id; what a crash leaves (a
// temporary file, a torn or foreign record) is removed on load and never
// read as a record. A group's record is kept apart from a snapshot's of
// the same name, and goes with any of its members.
func TestBackupNames(t *testing.T) {
	pool, state := testPool(t), t.TempDir()
	m := NewManager(pool, Config{StateDir: state})
	if _, ok, err := m.LookupBackupName("n1"); ok || err != nil {
		t.Fatalf("empty store: %v %v", ok, err)
	}
	a := BackupName{Name: "n1", SnapshotID: "backup:t:c@1", SourceVolumeID: "vol-1"}
	b := BackupName{Name: "ns/with/slashes", SnapshotID: "backup:t:c@2", SourceVolumeID: "vol-2"}
	for _, r := range []BackupName{a, b} {
		if err := m.RecordBackupName(r); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(state, "snapshots")
	// What a crash leaves: a temporary file of an interrupted write, a torn
	// record, a record whose name does not hash to its file.
	torn := filepath.Join(dir, "00.json")
	foreign := m.backupNames.path("other")
	for p, data := range map[string]string{filepath.Join(dir, ".tmp-123"): `{"name":"n9"`, torn: `{"na`,
		foreign: `{"name":"n1","snapshotId":"backup:t:c@9"}`} {
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	g := BackupName{Name: "n1", GroupID: "g-1", CreatedAt: time.Date(2026, 11, 30, 10, 0, 0, 5, time.UTC),
		Members: []BackupName{{SnapshotID: "backup:t:c@1", SourceVolumeID: "vol-1"}, {SnapshotID: "backup:t:d@1", SourceVolumeID: "vol-2"}}}
	if err := m.RecordBackupGroup(g); err != nil { // the same name as a snapshot: apart
		t.Fatal(err)
	}

	m = NewManager(pool, Config{StateDir: state}) // a restart
	if got, ok, err := m.LookupBackupGroup("n1"); !ok || err != nil || !reflect.DeepEqual(got, g) {
		t.Errorf("group after restart: %+v %v %v, want %+v", got, ok, err, g)
	}
	for _, want := range []BackupName{a, b} {
		if got, ok, err := m.LookupBackupName(want.Name); !ok || err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("after restart %q: %+v %v %v, want %+v", want.Name, got, ok, err, want)
		}
	}
	if got, ok, _ := m.LookupBackupName("n9"); ok {
		t.Errorf("a temporary file was read as a record: %+v", got)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("crash leftovers not removed: %d files in %s, want 2", len(ents), dir)
	}

	// A retry that recorded a newer backup of the name: forgetting the old
	// id (a DeleteSnapshot finishing late) keeps it.
	a2 := BackupName{Name: "n1", SnapshotID: "backup:t:c@3", SourceVolumeID: "vol-1"}
	if err := m.RecordBackupName(a2); err != nil {
		t.Fatal(err)
	}
	if err := m.ForgetBackup(a.SnapshotID); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := m.LookupBackupName("n1"); !ok || !reflect.DeepEqual(got, a2) {
		t.Errorf("forgetting the replaced id: %+v %v, want %+v", got, ok, a2)
	}
	if _, ok, _ := m.LookupBackupGroup("n1"); ok {
		t.Errorf("the group of a forgotten member is still recorded")
	}
	for _, id := range []string{a2.SnapshotID, b.SnapshotID, "backup:t:c@none"} {
		if err := m.ForgetBackup(id); err != nil {
			t.Fatal(err)
		}
	}
	m = NewManager(pool, Config{StateDir: state})
	for _, n := range []string{"n1", b.Name} {
		if got, ok, err := m.LookupBackupName(n); ok || err != nil {
			t.Errorf("forgotten %q still recorded after restart: %+v %v", n, got, err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files left after forgetting every backup: %v", ents)
	}
}

// TestBackupNamesConcurrent: records written and forgotten by concurrent
// calls (CreateSnapshot and DeleteSnapshot of different names) are on disk
// exactly as the store answers them (run under -race as well).
func TestBackupNamesConcurrent(t *testing.T) {
	pool, state := testPool(t), t.TempDir()
	m := NewManager(pool, Config{StateDir: state})
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := BackupName{Name: fmt.Sprintf("n%d", i), SnapshotID: fmt.Sprintf("backup:t:c@%d", i), SourceVolumeID: "vol-1"}
			if err := m.RecordBackupName(r); err != nil {
				t.Error(err)
			}
			if _, ok, err := m.LookupBackupName(r.Name); !ok || err != nil {
				t.Errorf("%s not found after recording: %v", r.Name, err)
			}
			if i%2 == 0 {
				if err := m.ForgetBackup(r.SnapshotID); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	m = NewManager(pool, Config{StateDir: state})
	for i := range 16 {
		_, ok, err := m.LookupBackupName(fmt.Sprintf("n%d", i))
		if err != nil || ok != (i%2 == 1) {
			t.Errorf("n%d after restart: recorded %v (%v), want %v", i, ok, err, i%2 == 1)
		}
	}
}

// TestBackupNameFilesInjective: CSI names that differ only in case,
// separators, '/' or length (up to far beyond a file name's 255 bytes)
// each get their own record file, a plain file name that load keeps, so a
// fresh store (a driver restart) answers every name with its own record.
func TestBackupNameFilesInjective(t *testing.T) {
	dir := t.TempDir()
	s := &nameStore{dir: dir}
	names := []string{"a", "A", "a-b", "a_b", "a.b", "a/b", "a//b", "/a", "a/", ".", "..", "../x", ".tmp-1", "é", strings.Repeat("x", 4096)}
	for i := range 500 {
		names = append(names, fmt.Sprintf("snapshot-%d", i), fmt.Sprintf("Snapshot_%d", i), fmt.Sprintf("ns/snap.%d", i))
	}
	files := map[string]string{}
	for i, n := range names {
		if err := s.record(BackupName{Name: n, SnapshotID: fmt.Sprintf("backup:t:c@%d", i)}); err != nil {
			t.Fatalf("record %q: %v", n, err)
		}
		f := filepath.Base(s.path(n))
		if o, ok := files[f]; ok {
			t.Fatalf("names %q and %q share the record file %s", o, n, f)
		}
		if filepath.Dir(s.path(n)) != dir || strings.HasPrefix(f, ".") || len(f) > 255 {
			t.Fatalf("record file %q of %q is not a plain file of the directory", s.path(n), n)
		}
		files[f] = n
	}
	fresh := &nameStore{dir: dir}
	for i, n := range names {
		if r, ok, err := fresh.lookup(n); err != nil || !ok || r.SnapshotID != fmt.Sprintf("backup:t:c@%d", i) {
			t.Fatalf("after a restart, %q answers %+v, %v, %v", n, r, ok, err)
		}
	}
}
