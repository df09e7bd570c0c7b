package volume

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/internal/durable"
	"github.com/chainvol/chainvol/pkg/backend"
)

// stateDirs are the state directory's folders of per-lvol files: restore
// checkpoints and seed records (restores/), backup image records (images/),
// instant restores' hydration records (hydration/).
var stateDirs = []string{"restores", "images", "hydration"}

// sweepState removes what a killed driver can leave in the state
// directory: temporary files of an interrupted write (durable.IsTemp;
// ".image-*" and "*.tmp" as image records and checkpoints were written
// before internal/durable) and the files of
// lvols that no longer exist (a kill between the pool's delete and the
// file's removal). It runs once, when the Manager is made, before any job
// can write there; what it cannot read it leaves (and logs), since a file
// kept costs only disk while a file removed too early could cost a resume.
func (m *Manager) sweepState() {
	if m.cfg.StateDir == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, dir := range stateDirs {
		ents, err := os.ReadDir(filepath.Join(m.cfg.StateDir, dir))
		if err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				klog.ErrorS(err, "read state directory", "dir", dir)
			}
			continue
		}
		for _, e := range ents {
			if m.staleStateFile(ctx, e.Name()) {
				p := filepath.Join(m.cfg.StateDir, dir, e.Name())
				if err := os.Remove(p); err != nil {
					klog.ErrorS(err, "remove stale state file", "path", p)
				} else {
					klog.V(2).InfoS("stale state file removed", "path", p)
				}
			}
		}
	}
}

// staleStateFile reports whether the state file called name is a
// temporary file or belongs to an lvol the pool does not have.
func (m *Manager) staleStateFile(ctx context.Context, name string) bool {
	if durable.IsTemp(name) || strings.HasPrefix(name, ".image-") || strings.HasSuffix(name, ".tmp") {
		return true
	}
	id := name
	for _, ext := range []string{".live", ".checkpoint", ".base", ".json", ".bits"} {
		id = strings.TrimSuffix(id, ext)
	}
	if id == name {
		return false // not ours: left alone
	}
	lv, err := m.pool.Get(ctx, id)
	if err == nil && (strings.HasSuffix(name, ".bits") || strings.HasSuffix(name, ".bits.live")) {
		// A hydration record outlives its hydration only if the driver
		// died between recording the volume ready and removing it; kept,
		// it would be trusted by a later instant restore of the same id.
		return Of(lv).Phase != PhaseHydrating
	}
	return errors.Is(err, backend.ErrNotFound)
}
