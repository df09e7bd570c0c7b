package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/lazy"
)

// instants are the open lazy images of this node's hydrating volumes, by
// volume id. The hydration job and the node's FUSE file must share one
// image: the single flight that keeps a fetch from landing on a write is
// in its memory (pkg/lazy rule 8).
type instants struct {
	mu   sync.Mutex
	vols map[string]*instant
}

// instant is one hydrating volume's image and, while it is staged, the
// FUSE file that serves it. mu is held while the image is opened, served,
// released or closed, so that a volume whose hydration ended is never
// opened again (its record is gone: the image would fetch over its writes).
type instant struct {
	mu    sync.Mutex
	im    *lazy.Image  // nil until opened
	srv   *lazy.Server // the FUSE file while staged over it
	ended bool         // hydration done and recorded ready: close once not served
}

// entry returns the instant of volume id, made empty if there is none.
func (s *instants) entry(id string) *instant {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.vols == nil {
		s.vols = map[string]*instant{}
	}
	iv := s.vols[id]
	if iv == nil {
		iv = &instant{}
		s.vols[id] = iv
	}
	return iv
}

// get returns the instant of volume id, nil if there is none.
func (s *instants) get(id string) *instant {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.vols[id]
}

// all returns every instant, by volume id.
func (s *instants) all() map[string]*instant {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]*instant, len(s.vols))
	for id, iv := range s.vols {
		out[id] = iv
	}
	return out
}

// drop forgets volume id's instant (its image closed by the caller, the
// volume ready or deleted). Nothing else drops one: an instant looked up
// before a drop must not be open beside a new one (two images of one data
// file would not share their single flight).
func (s *instants) drop(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.vols, id)
}

// HydrationRecordPath is the hydration record of volume id's instant
// restore (pkg/lazy record.go: the blocks already in its data file).
func (m *Manager) HydrationRecordPath(id string) string {
	return filepath.Join(m.cfg.StateDir, "hydration", id+".bits")
}

// InstantFile is the FUSE file that serves hydrating volume id's image
// while it is staged (STATE/instant/ID/image); the node's loop device is
// over it.
func (m *Manager) InstantFile(id string) string {
	return filepath.Join(m.instantDir(id), lazy.ImageName)
}

func (m *Manager) instantDir(id string) string { return filepath.Join(m.cfg.StateDir, "instant", id) }

// InstantServed reports whether volume id may be served over its instant
// image: its directory exists (or cannot be read: a killed driver's FUSE
// mount answers ENOTCONN). False lets NodeUnstageVolume of every other
// volume skip the instant image's cleanup.
func (m *Manager) InstantServed(id string) bool {
	_, err := os.Lstat(m.instantDir(id))
	return !errors.Is(err, os.ErrNotExist)
}

// ServeInstant returns the FUSE file that serves volume lv's image for
// NodeStageVolume, serving it if it is not served yet (and opening the
// image if the hydration job has not: a single try). It returns "" when
// the volume is no longer hydrating: the caller stages its data file.
// Errors: the target's and the image's (Unreachable ones the CO retries),
// the FUSE mount's wrapped in ErrNodeFailed.
func (m *Manager) ServeInstant(ctx context.Context, lv backend.LVol) (string, error) {
	iv := m.inst.entry(lv.ID)
	iv.mu.Lock()
	defer iv.mu.Unlock()
	if iv.srv != nil {
		return iv.srv.Path(), nil
	}
	// Read under iv.mu: hydration records ready before it takes iv.mu to
	// close the image, so a volume read hydrating here still has its image
	// or its record.
	cur, err := m.pool.Get(ctx, lv.ID)
	if err != nil {
		return "", err
	}
	if Of(cur).Phase != PhaseHydrating {
		if iv.im == nil { // ready: nothing opens an image of it again
			m.inst.drop(lv.ID)
		}
		return "", nil
	}
	if iv.im == nil {
		im, err := m.openImage(ctx, lv)
		if err != nil {
			return "", err
		}
		iv.im = im
	}
	dir := m.instantDir(lv.ID)
	if err := clearStaleMount(dir); err != nil {
		return "", Mark(ErrNodeFailed, "instant image of volume %s: %w", lv.ID, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", Mark(ErrNodeFailed, "instant image directory: %w", err)
	}
	srv, err := m.serveImage(ctx, lv.ID, iv.im, dir)
	if err != nil {
		return "", Mark(ErrNodeFailed, "serve the instant image of volume %s: %w", lv.ID, err)
	}
	iv.srv = srv
	return srv.Path(), nil
}

// ServingInstant reports whether this driver serves volume id's FUSE file
// (a loop device over the path of one it does not serve is a killed
// driver's, dead).
func (m *Manager) ServingInstant(id string) bool {
	iv := m.inst.get(id)
	if iv == nil {
		return false
	}
	iv.mu.Lock()
	defer iv.mu.Unlock()
	return iv.srv != nil
}

// ReleaseInstant stops serving volume id's FUSE file once NodeUnstageVolume
// detached the loop device over it, and closes the image if hydration has
// ended; it also unmounts a FUSE file a killed driver left. Errors: the
// unmount's, wrapped in ErrNodeFailed.
func (m *Manager) ReleaseInstant(id string) error {
	if iv := m.inst.get(id); iv != nil {
		iv.mu.Lock()
		defer iv.mu.Unlock()
		if iv.srv != nil {
			if err := unmountRetrying(iv.srv.Unmount); err != nil {
				return Mark(ErrNodeFailed, "unmount the instant image of volume %s: %w", id, err)
			}
			iv.srv = nil
			m.dropKept(id)
		}
		if iv.ended {
			m.closeInstant(id, iv)
		}
	}
	if err := clearStaleMount(m.instantDir(id)); err != nil {
		return Mark(ErrNodeFailed, "instant image of volume %s: %w", id, err)
	}
	_ = os.Remove(m.instantDir(id))
	return nil
}

// closeInstant closes iv's image (iv.mu held), forgets it and removes its
// hydration record: the volume is ready or deleted.
func (m *Manager) closeInstant(id string, iv *instant) {
	if iv.im != nil {
		if err := iv.im.Close(); err != nil {
			klog.ErrorS(err, "close instant image", "volume", id)
		}
		iv.im = nil
	}
	m.inst.drop(id)
	_ = lazy.RemoveRecord(m.HydrationRecordPath(id))
}

// stopInstant ends what an instant restore of lv holds (DeleteVolume, which
// the caller allows only when nothing is staged): the hydration job, the
// FUSE file, the image and its record.
func (m *Manager) stopInstant(id string) {
	if iv := m.inst.get(id); iv != nil {
		iv.mu.Lock()
		if iv.srv != nil {
			if err := unmountRetrying(iv.srv.Unmount); err != nil {
				klog.ErrorS(err, "unmount instant image of a deleted volume", "volume", id)
			}
			iv.srv = nil
		}
		m.closeInstant(id, iv)
		iv.mu.Unlock()
	}
	m.dropKept(id)
	_ = clearStaleMount(m.instantDir(id))
	_ = os.Remove(m.instantDir(id))
	_ = lazy.RemoveRecord(m.HydrationRecordPath(id))
}

// unmountRetrying retries unmount for up to 10 s while the loop device
// just detached from the FUSE file may still hold it (EBUSY).
func unmountRetrying(unmount func() error) error {
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if err = unmount(); err == nil || time.Now().After(deadline) {
			return err
		}
	}
}

// clearStaleMount unmounts the FUSE file system a killed driver left at
// dir (its server is gone: every access fails with ENOTCONN), detached
// lazily so that a loop device still over it does not keep it (MNT_DETACH;
// the device then fails its I/O, as it already does).
func clearStaleMount(dir string) error {
	err := unix.Unmount(dir, unix.MNT_DETACH)
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil // unmounted, or nothing was mounted there
	}
	return fmt.Errorf("unmount %s: %w", dir, err)
}
