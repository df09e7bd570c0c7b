package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"golang.org/x/sys/unix"
)

// snapClone times CSI snapshots and clones of raw block volumes of each
// size, written to the same fraction so a bigger volume also has more
// extents to share, as it would in use.
func (b *bench) snapClone() error {
	d := b.w.drv
	for _, size := range b.o.snapSizes {
		name := fmt.Sprintf("pvc-bench-snap-%d", size>>20)
		var vol string
		file, err := d.newLvolFile(func() error {
			var err error
			vol, err = d.createVolume(name, size, blockCap(), nil, nil)
			return err
		})
		if err != nil {
			return err
		}
		sc := SnapClone{Size: bytesFig(size)}
		t := time.Now()
		written, err := spreadWrite(file, size, b.o.snapFill)
		if err != nil {
			return err
		}
		sc.Written, sc.Extents = bytesFig(written), extents(file)
		logf("snapshot volume %s: wrote %.0f MB in %d extents in %.0fs", bytesStr(size), float64(written)/1e6, sc.Extents, time.Since(t).Seconds())
		var snapT, cloneT, delT, cpT []time.Duration
		for run := range b.o.snapRuns {
			settle(file)
			took, err := cpReflink(file)
			if err != nil {
				return err
			}
			cpT = append(cpT, took)
			settle(file)
			snap, took, err := d.snapshot(fmt.Sprintf("%s-snap-%d", name, run), vol, false)
			if err != nil {
				return err
			}
			snapT = append(snapT, took)
			src := &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: vol}}}
			settle(file)
			start := time.Now()
			clone, err := d.createVolume(fmt.Sprintf("%s-clone-%d", name, run), size, blockCap(), nil, src)
			if err != nil {
				return err
			}
			cloneT = append(cloneT, time.Since(start))
			start = time.Now()
			if err := d.deleteSnapshot(snap); err != nil {
				return err
			}
			if err := d.deleteVolume(clone); err != nil {
				return err
			}
			delT = append(delT, time.Since(start))
		}
		sc.Snapshot, sc.Clone, sc.DeleteAll = medianSeconds(snapT), medianSeconds(cloneT), medianSeconds(delT)
		sc.CpReflink = medianSeconds(cpT)
		b.res.SnapClone = append(b.res.SnapClone, sc)
		logf("%s: snapshot %.1f ms, clone %.1f ms, cp --reflink %.1f ms", bytesStr(size), sc.Snapshot.Value*1e3, sc.Clone.Value*1e3, sc.CpReflink.Value*1e3)
		if err := d.deleteVolume(vol); err != nil {
			return err
		}
	}
	return nil
}

// spreadWrite writes 1 MiB of incompressible data every 1/fill MiB of the
// file (so 1 MiB extents separated by holes), then fsyncs it.
func spreadWrite(path string, size int64, fill float64) (int64, error) {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := randomBuf()[:1<<20]
	stride := int64(float64(1<<20) / fill)
	stride = max(stride&^4095, 1<<20)
	var n int64
	for off := int64(0); off+int64(len(buf)) <= size; off += stride {
		if _, err := f.WriteAt(buf, off); err != nil {
			return n, err
		}
		n += int64(len(buf))
	}
	return n, f.Sync()
}

var extentRow = regexp.MustCompile(`(?m)^\s*\d+:\s+\d+\.\.`)

// extents counts the FIEMAP extents of a file, the rows of filefrag -v
// (its summary line counts physically discontiguous runs instead, which
// hides extents XFS happened to place at matching offsets), -1 if unknown.
func extents(path string) int {
	out, err := run("filefrag", "-v", path)
	if err != nil {
		return -1
	}
	return len(extentRow.FindAllString(out, -1))
}

// bytesStr prints a size in binary units.
func bytesStr(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20:
		return fmt.Sprintf("%.0fMiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%dB", n)
	}
}

// settle lets the pool's filesystem finish what the last step left it
// (XFS frees the extents of a deleted reflink copy in the background, and
// its log holds the deletion until the next flush), then flushes it
// (syncfs), so that no timed step pays for the one before: without it
// the snapshot paid for the removal of cp's copy, and cp for the deletes
// of the run before (docs/BENCHMARKS.md, session 10).
func settle(file string) {
	time.Sleep(100 * time.Millisecond)
	if f, err := os.Open(filepath.Dir(file)); err == nil {
		_ = unix.Syncfs(int(f.Fd()))
		f.Close()
	}
}

// cpReflink times `cp --reflink=always` of file to a new file beside it
// (then removed): what any tool pays for a reflink copy of that file,
// the limit of a snapshot or clone.
func cpReflink(file string) (time.Duration, error) {
	dst := file + ".cp"
	start := time.Now()
	out, err := exec.Command("cp", "--reflink=always", file, dst).CombinedOutput()
	took := time.Since(start)
	os.Remove(dst)
	if err != nil {
		return 0, fmt.Errorf("cp --reflink=always: %w: %s", err, out)
	}
	return took, nil
}
