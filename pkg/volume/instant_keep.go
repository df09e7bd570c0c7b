package volume

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/internal/tick"
	"github.com/chainvol/chainvol/pkg/lazy"
)

// Keeper holds a copy of the /dev/fuse descriptor of every instant volume
// this node serves over FUSE, under the volume's id, in a process that
// outlives the driver's (pkg/fdkeep.Client; docs/ARCHITECTURE.md "Driver
// restarts"). Get's error for an id it holds nothing under wraps
// fdkeep.ErrNotKept.
type Keeper interface {
	Put(ctx context.Context, key string, fd int, blob []byte) error
	Get(ctx context.Context, key string) (*os.File, []byte, error)
	Drop(ctx context.Context, key string) error
	Keys(ctx context.Context) ([]string, error)
}

// takeOverFor bounds how long a restarted driver tries to open the image
// of a kept volume (its target unreachable) before it gives the
// connection up: the application's I/O waits meanwhile, and fails after.
const takeOverFor = 2 * time.Minute

// serveImage serves im at dir: over a connection the keeper is given a
// copy of, when there is a keeper. A keeper that does not take it is
// logged, not an error: the volume is served, and only a driver restart
// would fail its I/O (as without a keeper).
func (m *Manager) serveImage(ctx context.Context, id string, im *lazy.Image, dir string) (*lazy.Server, error) {
	if m.cfg.Keeper == nil {
		return lazy.ServeWritable(im, dir)
	}
	srv, kept, err := lazy.ServeKept(im, dir)
	if err != nil {
		return nil, err
	}
	defer kept.File.Close()
	if err := m.cfg.Keeper.Put(ctx, id, int(kept.File.Fd()), kept.Blob); err != nil {
		klog.ErrorS(err, "the descriptor keeper did not take the FUSE connection of an instant volume: a driver restart will fail its I/O until it is staged again", "volume", id)
	}
	return srv, nil
}

// dropKept has the keeper close volume id's connection (unmounted, or
// never to be served again). Errors are logged: a keeper restart forgets
// everything anyway.
func (m *Manager) dropKept(id string) {
	if m.cfg.Keeper == nil {
		return
	}
	if err := m.cfg.Keeper.Drop(context.Background(), id); err != nil {
		klog.ErrorS(err, "the descriptor keeper did not drop the FUSE connection of an instant volume", "volume", id)
	}
}

// TakeOverInstants serves again, on the connections the keeper holds,
// the instant volumes a previous driver of this node served over FUSE
// (this driver just started): their applications' I/O waited in the
// kernel, and goes on. It returns at once; each volume is taken over in
// the background under its instant's lock, taken before it returns (so
// that no stage, unstage or hydration of it comes first). A connection
// that cannot be taken over within takeOverFor is dropped: its I/O fails
// (EIO), as without a keeper, instead of waiting for ever; one whose
// takeover ctx ends (the driver stops) stays kept for the next driver.
// Run before ResumeHydrations.
func (m *Manager) TakeOverInstants(ctx context.Context) {
	if m.cfg.Keeper == nil {
		return
	}
	go m.rekeepEvery(ctx)
	ids, err := m.cfg.Keeper.Keys(ctx)
	if err != nil {
		klog.ErrorS(err, "list the FUSE connections the descriptor keeper holds: instant volumes staged before the restart fail their I/O until staged again")
		return
	}
	for _, id := range ids {
		iv := m.inst.entry(id)
		iv.mu.Lock()
		go func() {
			defer iv.mu.Unlock()
			if err := m.takeOver(ctx, id, iv); err != nil {
				if ctx.Err() != nil {
					// This driver stops: the connection is left kept, for
					// the next one to take over (the I/O waits for it).
					klog.InfoS("stopping before the FUSE connection of an instant volume was taken over: left to the descriptor keeper for the next driver", "volume", id, "err", err)
					return
				}
				klog.ErrorS(err, "cannot serve the FUSE connection of an instant volume again: its I/O fails until it is unstaged and staged again", "volume", id)
				m.dropKept(id)
				return
			}
			klog.InfoS("took over the FUSE connection of an instant volume", "volume", id)
		}()
	}
}

// takeOver serves volume id on the kept connection (iv.mu held): its
// image while it hydrates (opened until the target answers, within
// takeOverFor), its data file once it has hydrated.
func (m *Manager) takeOver(ctx context.Context, id string, iv *instant) error {
	if iv.srv != nil {
		return nil
	}
	f, blob, err := m.cfg.Keeper.Get(ctx, id)
	if err != nil {
		return err
	}
	defer f.Close()
	lv, err := m.pool.Get(ctx, id)
	if err != nil {
		return fmt.Errorf("volume of the kept connection: %w", err)
	}
	dir := m.instantDir(id)
	if Of(lv).Phase != PhaseHydrating {
		path, err := m.pool.DataPath(id)
		if err != nil {
			return err
		}
		if iv.srv, err = lazy.TakeOverFile(path, f, blob, dir); err == nil {
			iv.ended = true
		}
		return err
	}
	wait, deadline := retryFirst, time.Now().Add(takeOverFor)
	for iv.im == nil {
		iv.im, err = m.openImage(ctx, lv)
		if err != nil && (!Unreachable(err) || time.Now().After(deadline)) {
			return err
		}
		if err != nil {
			if err := pause(ctx, wait); err != nil {
				return err
			}
			wait = min(2*wait, retryMax)
		}
	}
	iv.srv, err = lazy.TakeOver(iv.im, f, blob, dir) // on an error the image stays open for the hydration job
	return err
}

// rekeepInterval is how often the driver checks that the keeper holds
// every connection it serves: a keeper that restarted holds none.
const rekeepInterval = 5 * time.Second

// rekeepEvery runs rekeep every rekeepInterval until ctx ends.
func (m *Manager) rekeepEvery(ctx context.Context) {
	stop := tick.Every(rekeepInterval, func() { m.rekeep(ctx) })
	<-ctx.Done()
	stop()
}

// rekeep gives the keeper again the connection of every volume this
// driver serves over one that the keeper does not hold (it restarted),
// so that a driver restart after a keeper restart still keeps the
// volumes' I/O. Each is checked under its instant's lock: an unstage
// (which drops the connection after its unmount) is not undone.
func (m *Manager) rekeep(ctx context.Context) {
	keys, err := m.cfg.Keeper.Keys(ctx)
	if err != nil {
		klog.V(2).InfoS("the descriptor keeper does not answer", "err", err)
		return
	}
	held := make(map[string]bool, len(keys))
	for _, k := range keys {
		held[k] = true
	}
	for id, iv := range m.inst.all() {
		if held[id] {
			continue
		}
		if !iv.mu.TryLock() {
			continue // a takeover or an unstage of it runs: the next round
		}
		if iv.srv != nil {
			if k, err := iv.srv.Kept(); err == nil {
				if err := m.cfg.Keeper.Put(ctx, id, int(k.File.Fd()), k.Blob); err == nil {
					klog.InfoS("gave the descriptor keeper the FUSE connection of an instant volume again", "volume", id)
				}
				k.File.Close()
			}
		}
		iv.mu.Unlock()
	}
}
