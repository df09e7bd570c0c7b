package driver

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/volume"
)

// Read-only means read-only (issue 25): a volume staged for a reader-only
// access mode is attached to a read-only loop device, so neither its
// filesystem nor a raw reader of the device can change one byte of the
// lvol, and its filesystem is mounted without journal or log replay. A
// replay is a write, and a filesystem that needs one to be consistent is
// refused rather than shown inconsistent (checkReplayFree).

// readerOnly reports whether the capability's access mode promises that
// nothing writes: SINGLE_NODE_READER_ONLY, or MULTI_NODE_READER_ONLY
// (refused by checkCapability since volumes are node-local, but reader-only
// by definition should it ever be accepted).
func readerOnly(c *csi.VolumeCapability) bool {
	switch c.GetAccessMode().GetMode() {
	case csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY,
		csi.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY:
		return true
	}
	return false
}

// checkLoopMode makes sure the loop device dev is read-only exactly when
// readOnly asks: a volume staged for writers cannot be restaged reader-only
// under it, nor the reverse (CSI spec "NodeStageVolume": "Volume published
// but is incompatible", AlreadyExists).
func checkLoopMode(dev string, readOnly bool) error {
	ro, err := loopReadOnly(dev)
	if err != nil {
		return volume.Mark(volume.ErrNodeFailed, "%w", err)
	}
	if ro != readOnly {
		return volume.Mark(volume.ErrMountConflict, "the volume is already attached to %s with read-only=%t; unstage it before staging it for a %s access mode",
			dev, ro, map[bool]string{true: "reader-only", false: "writer"}[readOnly])
	}
	return nil
}

// readOnlyMountOptions are the staging mount options of a reader-only
// volume. ext: "noload", since ext4 will not even mount a journal flagged
// for recovery on a read-only device without it (checkReplayFree has made
// sure there is nothing to replay). XFS: "norecovery", since every freeze
// (and so every backup or snapshot chainvol takes) leaves a log that still
// holds the superblock's covering records, which XFS would insist on
// replaying; and "nouuid" as for every XFS mount (mountOptions).
func readOnlyMountOptions(fsType string, flags []string) []string {
	opts := mountOptions(fsType, flags)
	opts = slices.DeleteFunc(opts, func(o string) bool { return o == "rw" })
	extra := []string{"ro"}
	switch fsType {
	case "ext3", "ext4":
		extra = append(extra, "noload")
	case "xfs":
		extra = append(extra, "norecovery")
	}
	for _, o := range extra {
		if !slices.Contains(opts, o) {
			opts = append(opts, o)
		}
	}
	return opts
}

// stageReadOnly mounts the filesystem on the read-only device dev at target
// with readOnlyMountOptions: never formatted, checked (fsck), grown or
// replayed, all of which would write. A blank device or one needing a
// replay is FailedPrecondition (CSI spec "NodeStageVolume": "Exceeds
// capabilities").
func (d *node) stageReadOnly(ctx context.Context, id, dev, target, fsType string, flags []string) error {
	found, err := d.mounter.GetDiskFormat(dev)
	if err != nil {
		return volume.Mark(volume.ErrNodeFailed, "detect the filesystem on %s: %w", dev, err)
	}
	if found == "" {
		return volume.Mark(volume.ErrIncompatible, "volume %s holds no filesystem and a reader-only volume is never formatted; stage it for a writer access mode first", id)
	}
	if err := d.checkReplayFree(ctx, dev, found); errors.Is(err, errNeedsReplay) {
		return volume.Mark(volume.ErrIncompatible, "volume %s cannot be staged reader-only: %w; stage it once for a writer access mode (which replays the journal) or restore it from a backup", id, err)
	} else if err != nil {
		return volume.Mark(volume.ErrNodeFailed, "check whether volume %s needs a journal replay: %w", id, err)
	}
	if err := os.MkdirAll(target, 0o750); err != nil {
		return volume.Mark(volume.ErrNodeFailed, "create staging path: %w", err)
	}
	opts := readOnlyMountOptions(fsType, flags)
	if err := d.mounter.Mount(dev, target, fsType, opts); err != nil {
		return volume.Mark(volume.ErrNodeFailed, "mount %s at %s as %s (%s): %w", dev, target, fsType, strings.Join(opts, ","), err)
	}
	klog.V(4).InfoS("mounted reader-only", "device", dev, "path", target, "options", opts)
	return nil
}

// errNeedsReplay is wrapped by checkReplayFree's refusals.
var errNeedsReplay = errors.New("needs a replay")

// checkReplayFree returns an error wrapping errNeedsReplay and naming what
// is left to replay when the filesystem on dev is consistent only after a
// journal (ext) or log (XFS) replay: a copy of a filesystem that was
// mounted at the time, a crash. Frozen filesystems, and so chainvol's
// backups and snapshots, pass. Other errors: the check could not be made.
func (d *node) checkReplayFree(ctx context.Context, dev, fsType string) error {
	switch fsType {
	case "ext2", "ext3", "ext4":
		return extReplayFree(dev)
	case "xfs":
		return d.xfsReplayFree(ctx, dev)
	}
	return nil
}

// ext superblock layout: the superblock starts at byte 1024 of the device.
const (
	extSuperOffset   = 1024
	extMagicAt       = 0x38 // s_magic, little-endian uint16
	extMagic         = 0xEF53
	extIncompatAt    = 0x60 // s_feature_incompat, little-endian uint32
	extIncompatRecov = 0x4  // EXT3_FEATURE_INCOMPAT_RECOVER: the journal needs replay
)

// extReplayFree reads the ext superblock of dev and fails when its journal
// is flagged for recovery (needs_recovery), which ext4 clears only on a
// clean unmount or a freeze.
func extReplayFree(dev string) error {
	f, err := os.Open(dev)
	if err != nil {
		return err
	}
	defer f.Close()
	sb := make([]byte, 1024)
	if _, err := f.ReadAt(sb, extSuperOffset); err != nil {
		return fmt.Errorf("read the ext superblock of %s: %w", dev, err)
	}
	if binary.LittleEndian.Uint16(sb[extMagicAt:]) != extMagic {
		return fmt.Errorf("%s holds no ext superblock", dev)
	}
	if binary.LittleEndian.Uint32(sb[extIncompatAt:])&extIncompatRecov != 0 {
		return fmt.Errorf("%w: its ext journal needs recovery (needs_recovery: it was not unmounted cleanly)", errNeedsReplay)
	}
	return nil
}

// xfsReplayFree runs xfs_logprint -t on dev (it only reads) and fails when
// the log holds more than superblock covering records.
func (d *node) xfsReplayFree(ctx context.Context, dev string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // a dirty log's dump can be long: stop reading at the first item
	cmd := d.exec.CommandContext(ctx, "xfs_logprint", "-t", dev)
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("xfs_logprint -t %s: %w", dev, err)
	}
	item, perr := xfsLogReplayItem(out)
	cancel()
	_, _ = io.Copy(io.Discard, out)
	werr := cmd.Wait()
	switch {
	case perr != nil:
		return fmt.Errorf("xfs_logprint -t %s: %w (exit: %v)", dev, perr, werr)
	case item != "":
		return fmt.Errorf("%w: its XFS log holds changes only a log recovery applies (first: %q)", errNeedsReplay, item)
	}
	return nil
}

// xfsLogReplayItem reads xfs_logprint -t output and returns the first
// logged item that a log recovery would have to apply, "" when the log is
// clean or holds only buffers of the primary superblock (block 0): the
// covering records a freeze or an idle log writes, whose content is on disk
// already. Anything else (inodes, AG headers, other buffers, an item type
// this parser does not know) counts as a change.
func xfsLogReplayItem(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	dirty := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case !dirty:
			if strings.Contains(line, "state: <CLEAN>") {
				return "", nil
			}
			dirty = strings.Contains(line, "state: <DIRTY>")
		case line == "", line == "SUPER Block Buffer:",
			strings.HasPrefix(line, "LOG REC AT"), strings.HasPrefix(line, "===="),
			strings.HasPrefix(line, "TRANS:"), strings.HasPrefix(line, "BUF: cnt:"):
		case strings.HasPrefix(line, "BUF:") && strings.Contains(line, "start blkno:0x0 "):
		default:
			return line, nil
		}
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	if !dirty {
		return "", fmt.Errorf("no log state in its output")
	}
	return "", nil
}
