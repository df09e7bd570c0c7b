package s3chain

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/chainvol/chainvol/internal/blockdev"
)

// destinationIdentity says which file or disk the open restore destination f
// of size bytes is, so that a checkpoint applies to that destination only. A
// path or a device number alone is not enough: a file removed and made again,
// or another image attached at the same /dev/loopN, has the same ones.
//
//   - regular file: device and inode numbers and birth time (statx(2)
//     STATX_BTIME, nanoseconds, where the filesystem records it), and size;
//   - block device: device number, size, and the medium behind it: a loop
//     device's backing file (its path, device, inode, birth time) and
//     offset, a device-mapper UUID, or the disk's WWID or serial from
//     sysfs; a partition adds its start sector to its disk's identity.
//
// A medium sysfs does not identify (a RAM disk, some virtual disks) reads
// "medium=unknown": the restore's read-back check of every skipped block
// (restoreJob.verifyDone) then decides alone, as it does for every
// destination.
func destinationIdentity(f *os.File, size int64) (string, error) {
	var st unix.Statx_t
	if err := unix.Statx(int(f.Fd()), "", unix.AT_EMPTY_PATH, unix.STATX_TYPE|unix.STATX_INO|unix.STATX_BTIME, &st); err != nil {
		return "", fmt.Errorf("statx %s: %w", f.Name(), err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		dir := blockdev.Dir(unix.Mkdev(st.Rdev_major, st.Rdev_minor))
		return fmt.Sprintf("blockdev %d:%d size=%d %s", st.Rdev_major, st.Rdev_minor, size, diskIdentity(dir)), nil
	}
	return fmt.Sprintf("file %s size=%d", fileIdentity(&st), size), nil
}

// fileIdentity is a file's device, inode and (when known) birth time.
func fileIdentity(st *unix.Statx_t) string {
	s := fmt.Sprintf("dev=%d:%d ino=%d", st.Dev_major, st.Dev_minor, st.Ino)
	if st.Mask&unix.STATX_BTIME != 0 {
		s += fmt.Sprintf(" btime=%d.%09d", st.Btime.Sec, st.Btime.Nsec)
	}
	return s
}

// diskIdentities are the sysfs attributes, relative to a block device's
// directory, that name its medium, most specific first.
var diskIdentities = []string{"dm/uuid", "wwid", "device/wwid", "device/serial", "serial"}

// diskIdentity names the medium behind the block device whose sysfs
// directory is dir (/sys/dev/block/MAJ:MIN).
func diskIdentity(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "partition")); err == nil {
		disk := ""
		if real, err := filepath.EvalSymlinks(dir); err == nil {
			disk = diskIdentity(filepath.Dir(real))
		}
		return "partition start=" + readAttr(filepath.Join(dir, "start")) + " of " + disk
	}
	if bf := readAttr(filepath.Join(dir, "loop", "backing_file")); bf != "" {
		id := "loop backing=" + bf + " offset=" + readAttr(filepath.Join(dir, "loop", "offset"))
		var st unix.Statx_t
		if unix.Statx(unix.AT_FDCWD, bf, 0, unix.STATX_INO|unix.STATX_BTIME, &st) == nil {
			id += " " + fileIdentity(&st)
		}
		return id
	}
	for _, name := range diskIdentities {
		if v := readAttr(filepath.Join(dir, name)); v != "" {
			return name + "=" + v
		}
	}
	return "medium=unknown"
}

// readAttr returns a sysfs attribute's trimmed value, "" when absent.
func readAttr(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// identityOf returns the identity of the existing restore destination path
// without claiming it (a read-only open), or "" when it cannot be opened.
func identityOf(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	size, _, err := fileSize(f)
	if err != nil {
		return ""
	}
	id, _ := destinationIdentity(f, size)
	return id
}
