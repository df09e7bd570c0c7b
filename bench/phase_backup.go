package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// chain is the chain of the workload volume: the driver names it after
// the PVC the external-provisioner reports.
const chain = "bench/data"

// backups creates the workload volume, fills it, takes the full backup
// with both tools, then the rounds of changes each followed by an
// incremental backup with both tools.
func (b *bench) backups() error {
	d := b.w.drv
	var err error
	b.vol, err = d.createVolume("pvc-bench-data", b.o.size, mountCap(),
		map[string]string{"csi.storage.k8s.io/pvc/name": "data", "csi.storage.k8s.io/pvc/namespace": "bench"}, nil)
	if err != nil {
		return err
	}
	if b.mnt, err = d.stagePublish(b.vol, "data"); err != nil {
		return err
	}
	b.gen = newGen(b.o.seed, b.mnt)
	t := time.Now()
	fill := int64(float64(b.o.size) * b.o.fill)
	if b.res.Workload.Fill, err = b.gen.fill(fill); err != nil {
		return fmt.Errorf("fill: %w", err)
	}
	if err := syncFS(b.mnt); err != nil {
		return err
	}
	logf("filled %s with %d files, %.0f MB in %.0fs", b.mnt, b.res.Workload.Fill.Files, float64(b.res.Workload.Fill.Bytes)/1e6, time.Since(t).Seconds())

	full := &b.res.Full
	if err := b.backupRound(0, &full.Chainvol, &full.Restic); err != nil {
		return err
	}
	m, err := b.w.repo.Manifest(b.ctx, chain, b.ids[0])
	if err != nil {
		return err
	}
	full.ImageAllocated = bytesFig(m.AllocatedBytes)
	full.Chainvol.Throughput = mbps(m.AllocatedBytes, time.Duration(full.Chainvol.Time.Value*float64(time.Second)))
	full.Restic.Throughput = mbps(m.AllocatedBytes, time.Duration(full.Restic.Time.Value*float64(time.Second)))
	if err := b.nullBackup(); err != nil {
		return err
	}
	logf("full backup: chainvol %.1fs, restic %.1fs, null backup %.1fs", full.Chainvol.Time.Value, full.Restic.Time.Value, full.NullBackup.Value)

	for r := 1; r <= b.o.rounds; r++ {
		st, err := b.changeRound(r)
		if err != nil {
			return err
		}
		inc := IncrementalPair{Round: r, ChangedBytes: bytesFig(st.NewBytes + st.OverwrittenBytes + st.DeletedBytes)}
		if err := b.backupRound(r, &inc.Chainvol, &inc.Restic); err != nil {
			return err
		}
		inc.ChainvolVsFull = Figure{Value: inc.Chainvol.Time.Value / full.Chainvol.Time.Value, Unit: "ratio"}
		b.res.Incremental = append(b.res.Incremental, inc)
		logf("round %d: chainvol %.2fs %.1f MB up, restic %.1fs %.1f MB up", r, inc.Chainvol.Time.Value,
			inc.Chainvol.Uploaded.Value/1e6, inc.Restic.Time.Value, inc.Restic.Uploaded.Value/1e6)
	}
	b.res.StoredAfterChain = map[string]Figure{}
	for tool, bucket := range map[string]string{"chainvol": chainvolBucket, "restic": resticBucket} {
		n, _, err := b.w.s3.bucketBytes(b.ctx, bucket)
		if err != nil {
			return err
		}
		b.res.StoredAfterChain[tool] = bytesFig(n)
	}
	return nil
}

// nullBackup measures the full backup's limit: the null backup of the
// same snapshot image, after its dirty pages are written back.
func (b *bench) nullBackup() error {
	img, err := resolveImage(b.ctx, b.w.repo, chain, b.ids[0])
	if err != nil {
		return err
	}
	unix.Sync()
	t, err := b.w.s3.nullBackup(b.ctx, &img, b.lastImage)
	b.res.Full.NullBackup = seconds(t)
	return err
}

// changeRound applies one round of changes and flushes them to the volume.
func (b *bench) changeRound(r int) (changeStats, error) {
	st, err := b.gen.change(r, int64(float64(b.res.Workload.Fill.Bytes)*b.o.change))
	if err != nil {
		return st, fmt.Errorf("changes of round %d: %w", r, err)
	}
	b.res.Workload.Rounds = append(b.res.Workload.Rounds, st)
	return st, syncFS(b.mnt)
}

// backupRound takes backup r through the driver (CreateSnapshot with
// backup=true, timed until ready_to_use), then has restic back up the same
// snapshot image (unless rs is nil). Uploaded bytes are each bucket's growth.
func (b *bench) backupRound(r int, cv, rs *BackupRun) error {
	d := b.w.drv
	// Whatever ran before (the fill, the last restic backup, whose
	// objects the S3 server stored without fsync) is written back first,
	// so that no tool pays for another's writeback, as in restoreSet.
	unix.Sync()
	before, _, err := b.w.s3.bucketBytes(b.ctx, chainvolBucket)
	if err != nil {
		return err
	}
	d.resetPeak()
	cpu0 := d.cpuTime()
	var snapID string
	var took time.Duration
	image, err := d.newLvolFile(func() error {
		var err error
		snapID, took, err = d.snapshot(fmt.Sprintf("bench-backup-%02d", r), b.vol, true)
		return err
	})
	if err != nil {
		return err
	}
	cv.PeakRSS = bytesFig(d.peakRSS())
	cv.Time, cv.CPU = seconds(took), seconds(d.cpuTime()-cpu0)
	after, _, err := b.w.s3.bucketBytes(b.ctx, chainvolBucket)
	if err != nil {
		return err
	}
	cv.Uploaded = bytesFig(after - before)
	m, err := b.w.repo.Manifest(b.ctx, chain, "latest")
	if err != nil {
		return err
	}
	cv.ID = m.ID
	b.ids = append(b.ids, m.ID)
	b.lastImage = image
	if eng, ok := d.uploadDuration(s3Target + ":" + chain + "@" + m.ID); ok {
		cv.Engine = seconds(eng)
	}
	logf("backup %d: %s (%s) in %.2fs", r, snapID, image, took.Seconds())
	if rs == nil { // the extra links of the chain-length test
		return nil
	}
	return b.resticBackup(image, rs)
}

// resticBackup backs the snapshot image up with restic, measuring the
// bucket's growth and restic's peak RSS.
func (b *bench) resticBackup(image string, rs *BackupRun) error {
	unix.Sync() // chainvol's objects, just stored: not restic's writeback to pay
	before, _, err := b.w.s3.bucketBytes(b.ctx, resticBucket)
	if err != nil {
		return err
	}
	sum, cr, err := b.w.restic.backup(image)
	if err != nil {
		return err
	}
	after, _, err := b.w.s3.bucketBytes(b.ctx, resticBucket)
	if err != nil {
		return err
	}
	*rs = BackupRun{Time: seconds(cr.Wall), CPU: seconds(cr.CPU), Uploaded: bytesFig(after - before), PeakRSS: bytesFig(cr.PeakRSS), ID: sum.SnapshotID}
	b.resticS = append(b.resticS, sum.SnapshotID)
	return nil
}

// syncFS flushes the filesystem holding dir (syncfs), so the snapshot and
// the time of the backup do not include writeback of the changes.
func syncFS(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Syncfs(int(f.Fd()))
}
