package driver

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"

	"github.com/chainvol/chainvol/internal/testutil"
	"github.com/chainvol/chainvol/pkg/volume"
)

const snro = csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY

// fileSum is the sha256 of a file's bytes.
func fileSum(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// refusedWrite fails the test unless err is the kernel refusing a write to
// something read-only.
func refusedWrite(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, syscall.EROFS) && !errors.Is(err, syscall.EPERM) && !errors.Is(err, syscall.EACCES) {
		t.Errorf("write to %s: %v, want EROFS or EPERM", what, err)
	}
}

// writeDevice writes one 4 KiB block at the start of the block device p.
func writeDevice(p string) error {
	f, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, 4096), 0); err != nil {
		return err
	}
	return f.Sync()
}

// fillVolume stages lv for a writer, leaves data on it (a file, or bytes at
// the start of a raw device) and unstages it cleanly.
func (e *nodeEnv) fillVolume(t *testing.T, id, fsType string) {
	t.Helper()
	staging := e.path("fill-" + id)
	if fsType == "" {
		mustOK(t, e.stage(id, staging, blockCap(snw)))
		mustOK(t, os.WriteFile(e.loopOf(id), []byte("raw chainvol bytes"), 0))
	} else {
		mustOK(t, e.stage(id, staging, mountCap(fsType, snw)))
		mustOK(t, os.WriteFile(filepath.Join(staging, "f"), []byte("chainvol "+fsType), 0o644))
	}
	mustOK(t, e.unstage(id, staging))
}

// TestNodeReaderOnly stages and publishes ext4, XFS and raw block volumes
// for SINGLE_NODE_READER_ONLY (publish readonly false: the mode alone must
// suffice) and checks that the loop device is read-only, that writes to the
// staging path, the target and the devices are refused, that the data reads
// back, and that the lvol's data file has the same sha256 after unstage.
func TestNodeReaderOnly(t *testing.T) {
	e := newNodeEnv(t)
	for _, fsType := range []string{"ext4", "xfs", ""} {
		name := firstNonEmpty(fsType, "block")
		t.Run(name, func(t *testing.T) {
			access, c := accessMount, mountCap(fsType, snro)
			if fsType == "" {
				access, c = accessBlock, blockCap(snro)
			}
			lv := e.volume("ro-"+name, volume.Record{FSType: fsType, AccessType: access}.Encode())
			e.fillVolume(t, lv.ID, fsType)
			file := mustFile(t, e.pool, lv.ID)
			before := fileSum(t, file)

			staging, target := e.path("stage-"+name), e.path("pods/"+name+"/target")
			mustOK(t, e.stage(lv.ID, staging, c))
			mustOK(t, e.stage(lv.ID, staging, c)) // idempotent
			dev := e.loopOf(lv.ID)
			if ro, err := loopReadOnly(dev); err != nil || !ro {
				t.Errorf("loop device %s read-only = %t, %v; want true", dev, ro, err)
			}
			mustOK(t, e.publish(lv.ID, staging, target, c, false))
			mustOK(t, e.publish(lv.ID, staging, target, c, false)) // idempotent
			if fsType == "" {
				e.checkRawReadOnly(t, dev, target)
			} else {
				e.checkFSReadOnly(t, fsType, staging, target)
			}
			refusedWrite(t, "the loop device "+dev, writeDevice(dev))

			mustOK(t, e.unpublish(lv.ID, target))
			mustOK(t, e.unstage(lv.ID, staging))
			if after := fileSum(t, file); after != before {
				t.Errorf("the lvol's data file changed under a reader-only stage: sha256 %s, was %s", after, before)
			}
		})
	}
}

// checkFSReadOnly: the staging mount has the reader-only options, the file
// written before reads back, and new files are refused on both paths.
func (e *nodeEnv) checkFSReadOnly(t *testing.T, fsType, staging, target string) {
	t.Helper()
	m, err := mountAt(staging)
	if err != nil || m == nil {
		t.Fatalf("staging mount = %v, %v", m, err)
	}
	// ext4 lists its noload as norecovery, as XFS does.
	if !slices.Contains(m.MountOptions, "ro") || !slices.Contains(m.SuperOptions, "norecovery") {
		t.Errorf("%s staging mount options %v / %v; want ro and norecovery", fsType, m.MountOptions, m.SuperOptions)
	}
	for _, p := range []string{staging, target} {
		if got, err := os.ReadFile(filepath.Join(p, "f")); err != nil || string(got) != "chainvol "+fsType {
			t.Errorf("read %s/f = %q, %v", p, got, err)
		}
		refusedWrite(t, p, os.WriteFile(filepath.Join(p, "new"), []byte("x"), 0o644))
		refusedWrite(t, p+"/f", os.WriteFile(filepath.Join(p, "f"), []byte("changed"), 0o644))
	}
}

// checkRawReadOnly: the published device file reads the bytes written
// before and refuses writes.
func (e *nodeEnv) checkRawReadOnly(t *testing.T, dev, target string) {
	t.Helper()
	if !isDevice(target, mustRdev(t, dev)) {
		t.Fatalf("target %s is not the device %s", target, dev)
	}
	f, err := os.Open(target)
	mustOK(t, err)
	got := make([]byte, len("raw chainvol bytes"))
	_, err = io.ReadFull(f, got)
	f.Close()
	if err != nil || string(got) != "raw chainvol bytes" {
		t.Errorf("read %s = %q, %v", target, got, err)
	}
	refusedWrite(t, "the published device "+target, writeDevice(target))
}

func mustRdev(t *testing.T, dev string) uint64 {
	t.Helper()
	rdev, err := deviceNumber(dev)
	mustOK(t, err)
	return rdev
}

// TestNodeReaderOnlyModeConflict: a volume staged for writers cannot be
// restaged reader-only under it, nor the reverse (AlreadyExists), and the
// refusal leaves the staged device as it was; a reader-only volume is not
// expanded (FailedPrecondition, its lvol untouched), nor a blank one
// formatted.
func TestNodeReaderOnlyModeConflict(t *testing.T) {
	e := newNodeEnv(t)
	lv := e.volume("conflict", volume.Record{FSType: "ext4", AccessType: accessMount}.Encode())
	e.fillVolume(t, lv.ID, "ext4")
	staging := e.path("stage")
	mustOK(t, e.stage(lv.ID, staging, mountCap("ext4", snw)))
	wantCode(t, e.stage(lv.ID, staging, mountCap("ext4", snro)), codes.AlreadyExists, "read-only=false")
	mustOK(t, e.unstage(lv.ID, staging))
	mustOK(t, e.stage(lv.ID, staging, mountCap("ext4", snro)))
	wantCode(t, e.stage(lv.ID, staging, mountCap("ext4", snw)), codes.AlreadyExists, "read-only=true")
	if e.loopOf(lv.ID) == "" {
		t.Error("a refused restage detached the staged volume's loop device")
	}
	sizeBefore := lv.SizeBytes
	_, err := e.expand(lv.ID, staging, 2*volSize)
	wantCode(t, err, codes.FailedPrecondition, "reader-only")
	if got, err := e.pool.Get(e.ctx, lv.ID); err != nil || got.SizeBytes != sizeBefore {
		t.Errorf("a refused expand of a reader-only volume resized its lvol: %d bytes, %v; want %d", got.SizeBytes, err, sizeBefore)
	}
	mustOK(t, e.unstage(lv.ID, staging))

	blank := e.volume("blank", volume.Record{FSType: "ext4", AccessType: accessMount}.Encode())
	wantCode(t, e.stage(blank.ID, e.path("blank"), mountCap("ext4", snro)), codes.FailedPrecondition, "never formatted")
	if dev := e.loopOf(blank.ID); dev != "" {
		t.Errorf("a refused reader-only stage left loop device %s attached", dev)
	}
}

// TestNodeReaderOnlyReplay copies an lvol's data file while its filesystem
// is mounted (as a crash would leave it): a reader-only stage of the copy is
// refused, since only a replay (a write) makes it consistent, and leaves its
// bytes alone. A copy taken while the filesystem is frozen (what backups and
// snapshots are) stages reader-only and shows its files: an XFS log then
// still holds the superblock's covering records, which norecovery skips.
func TestNodeReaderOnlyReplay(t *testing.T) {
	e := newNodeEnv(t)
	for _, fsType := range []string{"ext4", "xfs"} {
		t.Run(fsType, func(t *testing.T) {
			rec := volume.Record{FSType: fsType, AccessType: accessMount}.Encode()
			src, dirty, frozen := e.volume("src-"+fsType, rec), e.volume("dirty-"+fsType, rec), e.volume("frozen-"+fsType, rec)
			staging := e.path("src-" + fsType)
			mustOK(t, e.stage(src.ID, staging, mountCap(fsType, snw)))
			mustOK(t, os.WriteFile(filepath.Join(staging, "f"), []byte("chainvol "+fsType), 0o644))
			testutil.Run(t, "sync")
			testutil.Run(t, "cp", "--sparse=always", mustFile(t, e.pool, src.ID), mustFile(t, e.pool, dirty.ID))
			testutil.Run(t, "fsfreeze", "--freeze", staging)
			testutil.Run(t, "cp", "--sparse=always", mustFile(t, e.pool, src.ID), mustFile(t, e.pool, frozen.ID))
			testutil.Run(t, "fsfreeze", "--unfreeze", staging)
			mustOK(t, e.unstage(src.ID, staging))

			before := fileSum(t, mustFile(t, e.pool, dirty.ID))
			wantCode(t, e.stage(dirty.ID, e.path("dirty-"+fsType), mountCap(fsType, snro)), codes.FailedPrecondition, "recovery")
			if dev := e.loopOf(dirty.ID); dev != "" {
				t.Errorf("a refused reader-only stage left loop device %s attached", dev)
			}
			if after := fileSum(t, mustFile(t, e.pool, dirty.ID)); after != before {
				t.Errorf("a refused reader-only stage changed the lvol: sha256 %s, was %s", after, before)
			}

			frozenStage := e.path("frozen-" + fsType)
			mustOK(t, e.stage(frozen.ID, frozenStage, mountCap(fsType, snro)))
			if got, err := os.ReadFile(filepath.Join(frozenStage, "f")); err != nil || string(got) != "chainvol "+fsType {
				t.Errorf("read the frozen copy's file = %q, %v", got, err)
			}
			mustOK(t, e.unstage(frozen.ID, frozenStage))
		})
	}
}

// TestXFSLogReplayItem parses xfs_logprint -t output: a clean log, a log of
// superblock covering records only (a frozen filesystem's) and one with an
// inode change (a crash's).
func TestXFSLogReplayItem(t *testing.T) {
	const head = "xfs_logprint:\n    data device: 0xffffffffffffffff\n    log device: 0xffffffffffffffff daddr: 409672 length: 131072\n\n"
	const sbRec = "LOG REC AT LSN cycle 1 block 48 (0x1, 0x30)\n" +
		"============================================================================\n" +
		"TRANS: tid:0x5aea41dc  #items:2  trans:0x5aea41dc  q:0x55610a976e70\n" +
		"BUF: cnt:2 total:2 a:0x55610a97ede0 len:24 a:0x55610a976ef0 len:384 \n" +
		"\tBUF:  #regs:2   start blkno:0x0   len:8   bmap size:1   flags:0x9000\n" +
		"\tSUPER Block Buffer:\n\n"
	const inode = "INO: cnt:3 total:3 a:0x564431fa4810 len:56 a:0x564431fa48c0 len:176 a:0x564431fa4980 len:16 \n" +
		"\tINODE: #regs:3   ino:0x83  flags:0x5   dsize:16\n"
	for _, tc := range []struct {
		name, out, want string
		err             bool
	}{
		{"clean", head + "    log tail: 40 head: 40 state: <CLEAN>\n", "", false},
		{"covering records", head + "    log tail: 48 head: 64 state: <DIRTY>\n\n" + sbRec + sbRec, "", false},
		{"inode", head + "    log tail: 8 head: 16 state: <DIRTY>\n\n" + sbRec + inode, "INO: cnt:3", false},
		{"agf", head + "    log tail: 8 head: 16 state: <DIRTY>\n\n" + strings.Replace(sbRec, "blkno:0x0 ", "blkno:0x8 ", 1), "BUF:  #regs:2   start blkno:0x8", false},
		{"no state", head, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := xfsLogReplayItem(strings.NewReader(tc.out))
			if (err != nil) != tc.err || !strings.HasPrefix(got, tc.want) || (tc.want == "") != (got == "") {
				t.Errorf("xfsLogReplayItem = %q, %v; want %q (error %t)", got, err, tc.want, tc.err)
			}
		})
	}
}
