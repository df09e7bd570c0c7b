package s3chain

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// pendingMarker is written to pending/<chain>/<id>.json before a backup
// uploads any block and removed after its manifest is written: while it
// exists GC leaves the chain's blocks alone (FORMAT.md §7).
type pendingMarker struct {
	FormatVersion int       `json:"formatVersion"`
	Chain         string    `json:"chain"`
	ID            string    `json:"id"`
	CreatedAt     time.Time `json:"createdAt"`
	Host          string    `json:"host"`
}

func (r *Repo) putPending(ctx context.Context, cfg *chainConfig, id string) error {
	host, _ := os.Hostname()
	data, _ := json.Marshal(pendingMarker{FormatVersion, cfg.Chain, id, time.Now().UTC(), host})
	if err := r.store.Put(ctx, pendingKey(cfg.Chain, id), data); err != nil {
		return fmt.Errorf("write in-progress marker of backup %q in chain %q: %w", id, cfg.Chain, err)
	}
	return nil
}

// deletePending removes the marker; a failure only delays GC of the chain
// until the marker expires (GCOptions.PendingTTL).
func (r *Repo) deletePending(ctx context.Context, cfg *chainConfig, id string) {
	_ = r.store.Delete(ctx, pendingKey(cfg.Chain, id))
}
