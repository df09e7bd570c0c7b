package volume

import (
	"github.com/chainvol/chainvol/pkg/retention"
)

// RetainedBackup is a backup made with a retention policy, as its
// snapshot (or group snapshot) name's record says.
type RetainedBackup struct {
	// SnapshotID is the backup snapshot id, "backup:TARGET:CHAIN@ID".
	SnapshotID string
	// Backup is the backup's id in its chain.
	Backup string
	// Policy is the policy of the request that made it.
	Policy retention.Policy
	// Group is the group snapshot name when it is a member of one ("":
	// a single backup); Members are then the group's snapshot ids.
	Group   string
	Members []string
}

// RetainedBackups returns the backups of chain of target tgt (its name or
// its hashed form in snapshot ids: SameChain) whose records carry a
// retention policy: single backups and members of group backups, in no
// order. Errors: those of reading the record directories on first use.
func (m *Manager) RetainedBackups(tgt, chain string) ([]RetainedBackup, error) {
	var out []RetainedBackup
	add := func(r BackupName, group string, members []string, p *retention.Policy) {
		ref, err := ParseBackupID(r.SnapshotID)
		if err != nil || p == nil || !SameChain(ref, tgt, chain) {
			return
		}
		out = append(out, RetainedBackup{SnapshotID: r.SnapshotID, Backup: ref.Backup, Policy: *p, Group: group, Members: members})
	}
	singles, err := m.backupNames.all()
	if err != nil {
		return nil, err
	}
	for _, r := range singles {
		add(r, "", nil, r.Retention)
	}
	groups, err := m.backupGroups.all()
	if err != nil {
		return nil, err
	}
	for _, g := range groups {
		ids := make([]string, len(g.Members))
		for i, mb := range g.Members {
			ids[i] = mb.SnapshotID
		}
		for _, mb := range g.Members {
			add(mb, g.Name, ids, g.Retention)
		}
	}
	return out, nil
}

// all returns every record, in no order.
func (s *nameStore) all() ([]BackupName, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return nil, err
	}
	out := make([]BackupName, 0, len(s.byName))
	for _, r := range s.byName {
		out = append(out, r)
	}
	return out, nil
}
