package lazy

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"k8s.io/mount-utils"
)

// Browse is a backup mounted read-only for browsing: the lazy image
// served by FUSE at a private directory, a read-only loop device over its
// file and the backup's filesystem mounted from it at Dir, without journal
// replay. For a backup without a filesystem (fsType ""), Dir holds the
// FUSE filesystem itself and the raw image is Dir/ImageName.
type Browse struct {
	// Dir is where the filesystem (or the raw image's directory) is.
	Dir string
	// Device is the loop device ("" for a raw image).
	Device string
	// Image is the raw image file (under FUSE).
	Image string

	srv     *Server
	fuseDir string
}

// OpenBrowse mounts im for browsing at dir (an existing empty directory)
// as a filesystem of fsType ("" for a raw image), using fuseDir (an
// existing empty directory) for the FUSE mount when fsType is set. On
// error nothing stays mounted or attached. Errors: Serve's, Attach's, the
// mount's (a filesystem that needs its journal replayed to be read may
// refuse).
func OpenBrowse(ctx context.Context, im *Image, fuseDir, dir, fsType string) (*Browse, error) {
	if fsType == "" {
		srv, err := Serve(im, dir)
		if err != nil {
			return nil, err
		}
		return &Browse{Dir: dir, Image: srv.Path(), srv: srv}, nil
	}
	srv, err := Serve(im, fuseDir)
	if err != nil {
		return nil, err
	}
	b := &Browse{Dir: dir, Image: srv.Path(), srv: srv, fuseDir: fuseDir}
	if b.Device, err = Attach(ctx, b.Image); err != nil {
		return nil, errors.Join(err, b.Close())
	}
	if err := mount.New("").Mount(b.Device, dir, fsType, MountOptions(fsType)); err != nil {
		return nil, errors.Join(fmt.Errorf("mount the backup's %s read-only at %s: %w", fsType, dir, err), b.Close())
	}
	return b, nil
}

// Ended returns a channel closed when Dir is no longer mounted (someone
// ran umount(8) on it), checked every interval.
func (b *Browse) Ended(interval time.Duration) <-chan struct{} {
	done := make(chan struct{})
	if b.Device == "" {
		go func() { b.srv.Wait(); close(done) }()
		return done
	}
	go func() {
		for isMountPoint(b.Dir) {
			time.Sleep(interval)
		}
		close(done)
	}()
	return done
}

// Close unmounts the filesystem at Dir if it is still mounted (lazily,
// umount -l, when it is still busy after 10 s: what holds it then gets
// EIO once the image is gone), detaches the loop device and unmounts the
// FUSE filesystem, in that order (lazily too when the filesystem was: the
// loop device then holds the image until the last holder lets go, and a
// FUSE mount left behind would outlive this process, dead); it is safe to
// call after any of them was undone by hand. Errors: the first step that
// failed (the later ones are still tried).
func (b *Browse) Close() error {
	var errs []error
	lazily := false
	if b.Device != "" {
		if err := unmountDir(b.Dir); err != nil {
			lazily = errors.Is(err, errDetachedLazily)
			errs = append(errs, err)
		}
		if err := Detach(b.Device); err != nil && len(errs) == 0 {
			errs = append(errs, err)
		}
	}
	if b.srv != nil && isMountPoint(b.srv.dir) {
		unmount := func() error { return unmountBusy(b.srv.Unmount) }
		if lazily {
			unmount = b.srv.Unmount
		}
		if err := unmount(); err != nil {
			if errors.Is(err, syscall.EBUSY) && syscall.Unmount(b.srv.dir, syscall.MNT_DETACH) == nil {
				err = fmt.Errorf("%w: detached lazily; it goes once what holds the backup's files lets go", err)
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// errDetachedLazily is unmountDir's error after it detached a busy
// mount lazily.
var errDetachedLazily = errors.New("detached lazily; what still uses it reads EIO from now on")

// unmountDir unmounts dir if it is a mount point, retrying for 10 s while
// it is busy (a shell still inside it), then detaching it lazily.
func unmountDir(dir string) error {
	var err error
	for deadline := time.Now().Add(10 * time.Second); isMountPoint(dir); time.Sleep(200 * time.Millisecond) {
		if err = mount.New("").Unmount(dir); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			if out, lerr := exec.Command("umount", "-l", dir).CombinedOutput(); lerr != nil {
				return fmt.Errorf("unmount %s: %w (umount -l: %v: %s)", dir, err, lerr, strings.TrimSpace(string(out)))
			}
			return fmt.Errorf("unmount %s: %w: %w", dir, err, errDetachedLazily)
		}
	}
	return nil
}
