package main

import (
	"context"
	"fmt"
)

// checkLiveSource decides what backup create does with a source whose
// filesystem is mounted read-write: refuse it (the default), freeze it for
// the copy (--freeze: the mount to freeze is returned), or copy it as it
// is (--allow-live). Refusing is the default because a freeze blocks every
// write of the applications on that filesystem for the whole backup,
// which for a large or first backup takes minutes: that must be asked for.
// It runs before the target is contacted, the freeze itself (freezeFor)
// as late as possible.
func checkLiveSource(f createFlags) (*liveMount, error) {
	if f.allowLive {
		return nil, nil
	}
	live, err := findLiveMount(f.from)
	if err != nil || live == nil {
		return nil, err
	}
	if !f.freeze {
		return nil, liveSourceError(f.from, live)
	}
	return live, nil
}

// freezeFor freezes live's filesystem when there is one to freeze; the
// returned thaw is never nil and may be called more than once.
func freezeFor(ctx context.Context, live *liveMount) (context.Context, func(), error) {
	if live == nil {
		return ctx, func() {}, nil
	}
	ctx, thaw, err := freezeMount(ctx, live.mountPoint)
	if err != nil {
		return ctx, func() {}, err
	}
	return ctx, thaw, nil
}

// liveSourceError names the mount and the ways to a consistent backup.
func liveSourceError(from string, live *liveMount) error {
	what := from
	if live.device != from {
		what = fmt.Sprintf("%s (through %s)", from, live.device)
	}
	return fmt.Errorf("%s is mounted read-write at %s: a copy of it would be torn (a restore of it needs journal recovery); "+
		"unmount it (or remount it read-only), back up a snapshot of it (LVM, a reflink copy), pass --freeze to freeze "+
		"the filesystem for the whole backup (its writers wait until the backup ends), or --allow-live to copy it as it is", what, live.mountPoint)
}
