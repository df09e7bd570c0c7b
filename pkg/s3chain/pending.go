package s3chain

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// pendingMarker is written to pending/<chain>/<random>.json before a backup
// reads the chain's manifests or uploads any block and removed after its manifest is written: while it
// exists GC leaves the chain's blocks alone (FORMAT.md §7).
type pendingMarker struct {
	FormatVersion int       `json:"formatVersion"`
	Chain         string    `json:"chain"`
	CreatedAt     time.Time `json:"createdAt"`
	Host          string    `json:"host"`
}

// putPending writes a new marker and returns its key. The caller deletes it
// when done; a failed delete only delays GC of the chain until the marker
// expires (GCOptions.PendingTTL).
func (r *Repo) putPending(ctx context.Context, cfg *chainConfig) (string, error) {
	host, _ := os.Hostname()
	data, _ := json.Marshal(pendingMarker{FormatVersion, cfg.Chain, time.Now().UTC(), host})
	token := make([]byte, 8)
	_, _ = rand.Read(token)
	key := pendingKey(cfg.Chain, hex.EncodeToString(token))
	if err := r.store.Put(ctx, key, data); err != nil {
		return "", fmt.Errorf("write in-progress marker in chain %q: %w", cfg.Chain, err)
	}
	return key, nil
}
