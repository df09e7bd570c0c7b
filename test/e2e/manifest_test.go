package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// splitBackupID splits "backup:TARGET:CHAIN@ID" (a chain not hashed).
func splitBackupID(t *testing.T, id string) (tgt, chain, backupID string) {
	t.Helper()
	rest, ok := strings.CutPrefix(id, "backup:")
	tgt, rest, ok2 := strings.Cut(rest, ":")
	chain, backupID, ok3 := strings.Cut(rest, "@")
	if !ok || !ok2 || !ok3 {
		t.Fatalf("snapshot id %q is not backup:TARGET:CHAIN@ID", id)
	}
	return tgt, chain, backupID
}

// manifestOf reads the manifest of the backup whose snapshot id is id
// from the chain's list of backups.
func manifestOf(t *testing.T, repo *s3chain.Repo, id string) *s3chain.Manifest {
	t.Helper()
	_, chain, bid := splitBackupID(t, id)
	ms, err := repo.Backups(context.Background(), chain)
	if err != nil {
		t.Fatalf("list backups of chain %s: %v", chain, err)
	}
	for _, m := range ms {
		if m.ID == bid {
			return m
		}
	}
	t.Fatalf("chain %s has no backup %s (%d backups)", chain, bid, len(ms))
	return nil
}
