package volume

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/internal/durable"
	"github.com/chainvol/chainvol/pkg/retention"
)

// A backup's snapshot name outlives its local snapshot lvol: the sweep
// deletes the lvol once it no longer serves as a base (bases.go), yet the
// CO may retry CreateSnapshot with the same name later (a lost answer, a
// sidecar restart), and the CSI spec ("CreateSnapshot") asks for the same
// snapshot while it exists. So the Manager keeps a durable record of each
// backup snapshot name in STATE/snapshots/, one file per name:
//
//   - written (atomically: temp, fsync, rename, fsync of the directory)
//     once the lvol is made and before its id is first answered, and
//     again before the sweep may delete the lvol (pkg/driver reportedReady:
//     a crash between the lvol and the record loses nothing);
//   - removed when DeleteSnapshot deleted that backup (only a record still
//     naming that id: a retry may have recorded a newer backup since).
//
// A crash can leave a record whose backup does not exist (between the
// target's delete and the record's removal; the CO's retry of the
// DeleteSnapshot removes it): the CSI shell answers a record only while
// the backup's manifest exists on the target, so a stale record costs one
// manifest lookup, then goes.

// BackupName records which backup a CreateSnapshot of a backup named, or
// which group of backups a CreateVolumeGroupSnapshot named.
type BackupName struct {
	// Name is the CSI snapshot (or group snapshot) name of the request.
	Name string `json:"name"`
	// SnapshotID is the backup snapshot id answered for it
	// ("backup:TARGET:CHAIN@ID", BackupID).
	SnapshotID string `json:"snapshotId,omitempty"`
	// SourceVolumeID is the request's source volume id.
	SourceVolumeID string `json:"sourceVolumeId,omitempty"`
	// GroupID, CreatedAt and Members are a group's: its id, its creation
	// time as answered, and its members (SnapshotID, SourceVolumeID).
	GroupID   string       `json:"groupId,omitempty"`
	CreatedAt time.Time    `json:"createdAt,omitzero"`
	Members   []BackupName `json:"members,omitempty"`
	// Retention is the retention policy of the request's class (snapshot
	// parameters keepLast, ...): the driver's background gc drops the
	// backups of the chain made with a policy that it no longer keeps
	// (pkg/driver retention.go). nil: made without one, never dropped.
	Retention *retention.Policy `json:"retention,omitempty"`
}

// nameStore holds the BackupName records of one directory, loaded on
// first use and kept in memory (one driver process owns the state dir), so
// that finding the records of a backup id needs no directory scan.
type nameStore struct {
	dir    string
	mu     sync.Mutex
	loaded bool
	byName map[string]BackupName
}

// RecordBackupName makes r the durable record of snapshot name r.Name,
// replacing any earlier one. It returns only once the record is on disk.
// Errors: those of the filesystem.
func (m *Manager) RecordBackupName(r BackupName) error { return m.backupNames.record(r) }

// LookupBackupName returns the record of snapshot name; false when there
// is none. Errors: those of reading the directory on first use.
func (m *Manager) LookupBackupName(name string) (BackupName, bool, error) {
	return m.backupNames.lookup(name)
}

// RecordBackupGroup is RecordBackupName for the group snapshot r.Name
// (STATE/groups/: group and snapshot names are apart in CSI).
func (m *Manager) RecordBackupGroup(r BackupName) error { return m.backupGroups.record(r) }

// LookupBackupGroup is LookupBackupName for a group snapshot name.
func (m *Manager) LookupBackupGroup(name string) (BackupName, bool, error) {
	return m.backupGroups.lookup(name)
}

// ForgetBackup removes the records naming backup snapshot id, if any, and
// only those: a record of the same name that a later backup replaced
// stays. A group's record goes with any of its members (the group no
// longer exists whole). Errors: those of the filesystem (the record then
// stays, stale).
func (m *Manager) ForgetBackup(id string) error {
	err := m.backupNames.forget(func(r BackupName) bool { return r.SnapshotID == id })
	return errors.Join(err, m.backupGroups.forget(func(r BackupName) bool {
		return slices.ContainsFunc(r.Members, func(b BackupName) bool { return b.SnapshotID == id })
	}))
}

// record writes r durably, then keeps it.
func (s *nameStore) record(r BackupName) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := durable.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("record backup snapshot name %q: %w", r.Name, err)
	}
	if err := durable.WriteFile(s.path(r.Name), b, 0o600); err != nil {
		return fmt.Errorf("record backup snapshot name %q: %w", r.Name, err)
	}
	s.byName[r.Name] = r
	return nil
}

// lookup returns the record of name.
func (s *nameStore) lookup(name string) (BackupName, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return BackupName{}, false, err
	}
	r, ok := s.byName[name]
	return r, ok, nil
}

// forget removes the records that match.
func (s *nameStore) forget(match func(BackupName) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return err
	}
	for name, r := range s.byName {
		if !match(r) {
			continue
		}
		if err := os.Remove(s.path(name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the record of backup snapshot name %q: %w", name, err)
		}
		delete(s.byName, name)
	}
	return nil
}

// path is the record file of name: the SHA-256 of the name, since a CSI
// name may hold '/' or exceed a file name's length.
func (s *nameStore) path(name string) string {
	h := sha256.Sum256([]byte(name))
	return filepath.Join(s.dir, hex.EncodeToString(h[:])+".json")
}

// load reads every record once. A temporary file is what a crash left
// mid-write (the record it was to replace, if any, is intact): removed. A
// record that cannot be decoded is logged and removed; its name then
// records nothing, as before this store existed. Callers hold s.mu.
func (s *nameStore) load() error {
	if s.loaded {
		return nil
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read backup snapshot names: %w", err)
	}
	s.byName = map[string]BackupName{}
	for _, e := range entries {
		p := filepath.Join(s.dir, e.Name())
		if strings.HasPrefix(e.Name(), ".") {
			_ = os.Remove(p)
			continue
		}
		var r BackupName
		b, err := os.ReadFile(p)
		if err == nil {
			err = json.Unmarshal(b, &r)
		}
		if err == nil && (r.Name == "" || s.path(r.Name) != p) {
			err = errors.New("the record does not match its file name")
		}
		if err != nil {
			klog.ErrorS(err, "unreadable backup snapshot name record; removed", "path", p)
			_ = os.Remove(p)
			continue
		}
		s.byName[r.Name] = r
	}
	s.loaded = true
	return nil
}
