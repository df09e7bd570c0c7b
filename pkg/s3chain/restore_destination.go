package s3chain

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"golang.org/x/sys/unix"
	"k8s.io/mount-utils"

	"github.com/chainvol/chainvol/internal/blockdev"
)

// ErrDestinationBusy: the restore destination is in use, and writing it would
// corrupt what uses it: a block device (or one of its partitions) that is
// mounted, held by device-mapper, md or LVM, or open exclusively by another
// program (swap, a mounted filesystem in another mount namespace), or a
// file attached to a loop device. The message names the user. It is never
// overridden (not even by chainvolctl restore --force).
var ErrDestinationBusy = errors.New("destination in use")

// mountInfoFile lists this mount namespace's mounts.
const mountInfoFile = "/proc/self/mountinfo"

// destination is the open file or block device a restore writes (the
// restore destination; "target" names the object store a backup lives in).
type destination struct {
	f     *os.File
	isDev bool
	// created: this run made the file, so no block of it is restored yet
	// whatever a checkpoint says.
	created bool
	// identity is what a checkpoint must record to apply (destinationIdentity).
	identity string
}

// openDestination opens path read-write for a restore of size bytes. A
// missing path is created as a sparse file of size bytes. A block device
// is refused when it or a partition of it is mounted or held, and is then
// opened with O_EXCL, so that the kernel refuses it while any other
// exclusive user (a mount in any namespace, swap, device-mapper) has it and
// keeps such users out until the restore closes it. A regular file is
// refused while a loop device is attached to it. Errors: ErrDestinationBusy,
// ErrDestinationTooSmall, and the open or stat error.
func openDestination(path string, size int64) (*destination, error) {
	d, err := openOrCreate(path, size)
	if err != nil {
		return nil, err
	}
	have, isDev, err := fileSize(d.f)
	if err == nil && have < size {
		err = fmt.Errorf("%w: destination %s has %d bytes, the backup needs %d", ErrDestinationTooSmall, path, have, size)
	}
	if err == nil {
		d.isDev = isDev
		d.identity, err = destinationIdentity(d.f, have)
	}
	if err != nil {
		d.f.Close()
		return nil, err
	}
	return d, nil
}

// openOrCreate creates a missing path (O_EXCL, so a file that appears
// meanwhile is not taken for ours) or opens the existing one after the
// in-use checks of its kind.
func openOrCreate(path string, size int64) (*destination, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			if err = f.Truncate(size); err != nil {
				f.Close()
				os.Remove(path)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("create restore destination: %w", err)
		}
		return &destination{f: f, created: true}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("restore destination: %w", err)
	}
	flags := os.O_RDWR
	switch {
	case fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0:
		if err := deviceFree(path, fi); err != nil {
			return nil, err
		}
		flags |= unix.O_EXCL // on a block device: an exclusive claim (open(2))
	case fi.Mode().IsRegular():
		if err := fileFree(path, fi); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("restore destination %s is neither a regular file nor a block device", path)
	}
	f, err := os.OpenFile(path, flags, 0)
	if errors.Is(err, unix.EBUSY) {
		return nil, fmt.Errorf("%w: %s is open exclusively by another user (a mounted filesystem, swap, device-mapper or md)", ErrDestinationBusy, path)
	}
	if err != nil {
		return nil, fmt.Errorf("open restore destination: %w", err)
	}
	return &destination{f: f}, nil
}

// CheckDestination runs the checks a restore makes before it opens an
// existing destination: a block device must be unmounted and unheld
// (ErrDestinationBusy naming the mount point or holder), a regular file not
// attached to a loop device (ErrDestinationBusy), and anything else is
// refused. A missing path is fine. It lets a caller refuse what a restore
// would refuse before asking whether to overwrite; Restore checks again
// (and opens a device with O_EXCL), so nothing relies on it alone.
func CheckDestination(path string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("restore destination: %w", err)
	case fi.Mode()&os.ModeDevice != 0 && fi.Mode()&os.ModeCharDevice == 0:
		return deviceFree(path, fi)
	case fi.Mode().IsRegular():
		return fileFree(path, fi)
	}
	return fmt.Errorf("restore destination %s is neither a regular file nor a block device", path)
}

// deviceFree returns ErrDestinationBusy naming the first user of block device
// path or of one of its partitions: a mount point in this mount namespace
// or a holder (device-mapper, md, LVM). The kernel's O_EXCL check that
// follows covers users these files cannot show.
func deviceFree(path string, fi os.FileInfo) error {
	rdev := blockdev.Rdev(fi)
	devs := append([]uint64{rdev}, slices.Sorted(maps.Keys(blockdev.Partitions(rdev)))...)
	infos, err := mount.ParseMountInfo(mountInfoFile)
	if err != nil {
		return fmt.Errorf("read mounts: %w", err)
	}
	for _, dev := range devs {
		for _, mi := range infos {
			if uint32(mi.Major) == unix.Major(dev) && uint32(mi.Minor) == unix.Minor(dev) {
				return fmt.Errorf("%w: %s is mounted at %s; unmount it first", ErrDestinationBusy, devName(path, dev, rdev), mi.MountPoint)
			}
		}
		holders, _ := os.ReadDir(filepath.Join(blockdev.Dir(dev), "holders"))
		if len(holders) > 0 {
			return fmt.Errorf("%w: %s is held by %s; remove that device first", ErrDestinationBusy, devName(path, dev, rdev), holders[0].Name())
		}
	}
	return nil
}

// fileFree returns ErrDestinationBusy when a loop device is attached to the
// regular file path (whatever name it was attached under), naming it.
func fileFree(path string, fi os.FileInfo) error {
	if loops := slices.Sorted(maps.Values(blockdev.LoopsBackedBy(fi))); len(loops) > 0 {
		return fmt.Errorf("%w: %s is attached to %s; detach it first (losetup -d %s)", ErrDestinationBusy, path, loops[0], loops[0])
	}
	return nil
}

func devName(path string, dev, rdev uint64) string {
	if dev == rdev {
		return path
	}
	return fmt.Sprintf("partition %d:%d of %s", unix.Major(dev), unix.Minor(dev), path)
}
