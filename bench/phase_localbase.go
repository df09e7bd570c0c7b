package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// localBase restores, with CreateVolume on node a, the chain's first
// backup while node a holds the local snapshot of the newest (the base of
// its next incremental): the driver starts from a reflink of that
// snapshot and fetches only the blocks whose digest differs, here ten
// rounds of ~1% changes. The goal is stated for backup N on a node holding
// N-10's snapshot; this is the same pair of images the other way round
// (rolling back ten backups), with the same blocks to fetch. Then the
// newest itself, whose snapshot the node holds: nothing to fetch.
func (b *bench) localBase() error {
	if len(b.ids) < 2 || len(b.res.Restores) == 0 {
		return nil
	}
	d := b.w.drv
	newest, first := b.ids[len(b.ids)-1], b.ids[0]
	want, err := b.w.repo.Image(b.ctx, chain, first)
	if err != nil {
		return err
	}
	have, err := b.w.repo.Image(b.ctx, chain, newest)
	if err != nil {
		return err
	}
	var alloc int64
	for _, blk := range want.Blocks {
		alloc += min(want.BlockSize, want.SizeBytes-blk.Index*want.BlockSize)
	}
	lb := &LocalBase{BackupID: first, BaseBackupID: newest, Distance: len(b.ids) - 1,
		DiffBytes: bytesFig(alloc - want.SharedBytes(have)), ImageBytes: bytesFig(alloc)}
	for _, rs := range b.res.Restores {
		if rs.BackupID == first {
			lb.FullLimit, lb.FullRestore = rs.Limit, rs.CSI
		}
	}
	var ts, same, engine []time.Duration
	for run := range b.o.runs {
		unix.Sync()
		seeded := d.logCount("restore starts from a local base")
		cr, err := b.restoreCSIOn(d, fmt.Sprintf("pvc-bench-rollback-%d", run), first)
		if err != nil {
			return err
		}
		if d.logCount("restore starts from a local base") == seeded {
			return fmt.Errorf("node a restored %s without starting from its local snapshot of %s (log %s)", first, newest, d.log)
		}
		ts = append(ts, cr.Wall)
		if eng, ok := d.lastRestoreDuration(); ok {
			engine = append(engine, eng)
		}
		if cr, err = b.restoreCSIOn(d, fmt.Sprintf("pvc-bench-same-%d", run), newest); err != nil {
			return err
		}
		same = append(same, cr.Wall)
	}
	lb.CSI, lb.Same, lb.Engine = medianSeconds(ts), medianSeconds(same), medianSeconds(engine)
	b.res.LocalBase = lb
	logf("restore of %s on the node holding %s's snapshot (%.0f MiB differ): %.2fs (engine %.2fs; full restore limit %.2fs); same backup %.2fs",
		first, newest, lb.DiffBytes.Value/mib, lb.CSI.Value, lb.Engine.Value, lb.FullLimit.Value, lb.Same.Value)
	return nil
}

// logCount counts the lines of the driver's log that contain s.
func (d *driverProc) logCount(s string) int {
	b, err := os.ReadFile(d.log)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), s)
}

var restoreDoneRE = regexp.MustCompile(`"restore done" .* duration="?([0-9.]+[a-zµ]+)`)

// lastRestoreDuration is the engine's own duration of the last restore the
// driver's log reports done (RestoreStats.Duration).
func (d *driverProc) lastRestoreDuration() (time.Duration, bool) {
	b, err := os.ReadFile(d.log)
	if err != nil {
		return 0, false
	}
	m := restoreDoneRE.FindAllStringSubmatch(string(b), -1)
	if len(m) == 0 {
		return 0, false
	}
	t, err := time.ParseDuration(m[len(m)-1][1])
	return t, err == nil
}
