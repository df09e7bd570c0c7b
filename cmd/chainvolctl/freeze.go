package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/klog/v2"
)

// fiFreeze and fiThaw are linux/fs.h's FIFREEZE and FITHAW, _IOWR('X',
// 119/120, int) in the generic ioctl encoding (amd64, arm64); x/sys/unix does
// not export them.
const (
	fiFreeze = 0xC0045877
	fiThaw   = 0xC0045878
)

// freezeMount freezes the filesystem mounted at mp (FIFREEZE first flushes
// it: its device then holds a clean filesystem, with no journal to
// replay) and returns the context to copy it under and the func that thaws
// it. thaw must run on every exit path: while frozen, every write of every
// application on it blocks. SIGINT and SIGTERM already cancel ctx (main);
// SIGHUP and SIGQUIT, which would otherwise kill the process with the
// filesystem frozen, cancel it too, and SIGPIPE is ignored so that a
// closed stderr fails a write instead of killing the process. Only SIGKILL
// (or a crash) leaves it frozen: then `fsfreeze -u MOUNT` thaws it.
func freezeMount(ctx context.Context, mp string) (context.Context, func(), error) {
	fd, err := unix.Open(mp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return ctx, nil, fmt.Errorf("open %s to freeze it: %w", mp, err)
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGPIPE)
	if err := unix.IoctlSetInt(fd, fiFreeze, 0); err != nil {
		signal.Stop(sigs)
		unix.Close(fd)
		if errors.Is(err, unix.EBUSY) {
			return ctx, nil, fmt.Errorf("freeze the filesystem at %s: it is already frozen by someone else; thaw it (fsfreeze -u %s) or wait, and run again", mp, mp)
		}
		return ctx, nil, fmt.Errorf("freeze the filesystem at %s: %w", mp, err)
	}
	klog.V(1).InfoS("froze filesystem for the backup", "path", mp)
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		for s := range sigs {
			if s != syscall.SIGPIPE {
				cancel()
			}
		}
	}()
	var once sync.Once
	return ctx, func() {
		once.Do(func() {
			if err := unix.IoctlSetInt(fd, fiThaw, 0); err != nil {
				fmt.Fprintf(os.Stderr, "Error: thaw the filesystem at %s: %v; it stays frozen until you run fsfreeze -u %s\n", mp, err, mp)
			} else {
				klog.V(1).InfoS("thawed filesystem", "path", mp)
			}
			unix.Close(fd)
			signal.Stop(sigs)
			close(sigs)
			cancel()
		})
	}, nil
}
