package main

import (
	"context"
	"fmt"
	"strings"
)

// checkLiveSource decides what backup create does with a source whose
// filesystem is mounted read-write: refuse it (the default), freeze it for
// the copy (--freeze: the mounts to freeze are returned), or copy it as it
// is (--allow-live). Refusing is the default because a freeze blocks every
// write of the applications on that filesystem for the whole backup,
// which for a large or first backup takes minutes: that must be asked for.
// It runs before the target is contacted, the freeze itself (freezeFor)
// as late as possible.
func checkLiveSource(f createFlags) ([]liveMount, error) {
	if f.allowLive {
		return nil, nil
	}
	live, err := findLiveMounts(f.from)
	if err != nil || len(live) == 0 {
		return nil, err
	}
	if !f.freeze {
		return nil, liveSourceError(f.from, live)
	}
	return live, nil
}

// freezeFor freezes the filesystems of live (each partition's of a disk);
// the returned thaw, never nil and idempotent, thaws them all, in reverse.
func freezeFor(ctx context.Context, live []liveMount) (context.Context, func(), error) {
	var thaws []func()
	thawAll := func() {
		for i := len(thaws) - 1; i >= 0; i-- {
			thaws[i]()
		}
	}
	for _, l := range live {
		var thaw func()
		var err error
		if ctx, thaw, err = freezeMount(ctx, l.mountPoint); err != nil {
			thawAll()
			return ctx, func() {}, err
		}
		thaws = append(thaws, thaw)
	}
	return ctx, thawAll, nil
}

// liveSourceError names the mounts and the ways to a consistent backup.
func liveSourceError(from string, live []liveMount) error {
	var where []string
	for _, l := range live {
		w := l.mountPoint
		if l.device != from {
			w += " (" + l.device + ")"
		}
		where = append(where, w)
	}
	return fmt.Errorf("%s is mounted read-write at %s: a copy of it would be torn (a restore of it needs journal recovery); "+
		"unmount it (or remount it read-only), back up a snapshot of it (LVM, a reflink copy), pass --freeze to freeze "+
		"the filesystem for the whole backup (its writers wait until the backup ends), or --allow-live to copy it as it is",
		from, strings.Join(where, ", "))
}
