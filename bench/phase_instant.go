package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Files of the instant-restore source volume (relative to its root).
const (
	instantProbe = "probe/file-1MiB" // the 1 MiB file read right after publish
	instantDB    = "db/table"        // the file of the random 4 KiB reads
	// instantDirs top-level directories hold the spread data: ext4's Orlov
	// allocator puts each top-level directory in another block group, so
	// the data lies across the whole volume, not at its start.
	instantDirs = 32
)

// instant measures restoreMode "instant" (issue 27) beside a full restore
// of the same backup in the same run, for each of -instant-sizes: a
// volume of that size on node a holding -instant-data bytes (a quarter in
// the database file, the rest spread over the volume, and a 1 MiB file)
// is backed up; node b, which holds no local snapshot, then restores it
// -runs times each way, alternating which goes first.
func (b *bench) instant() error {
	for _, size := range b.o.instantSizes {
		is, err := b.instantSet(size)
		if err != nil {
			return err
		}
		b.res.Instant = append(b.res.Instant, is)
		logf("instant %s: published in %.2fs (create %.2f, stage %.2f, publish %.2f), 1 MiB read %.1f ms (one GET %.1f ms), hydrated in %.1fs vs full restore %.1fs; random reads while hydrating p50 %.2f ms p99 %.2f ms (%d reads)",
			bytesStr(size), is.Published.Value, is.Create.Value, is.Stage.Value, is.Publish.Value, is.Read1MiB.Value*1e3,
			is.BlockGet.Value*1e3, is.Hydration.Value, is.FullRestore.Value, is.DB.P50.Value*1e3, is.DB.P99.Value*1e3, is.DB.Reads)
	}
	return nil
}

// instantSet writes and backs up the source volume of one size, then
// restores it both ways.
func (b *bench) instantSet(size int64) (InstantSet, error) {
	is := InstantSet{Size: bytesFig(size)}
	id, probeSum, err := b.instantSource(size)
	if err != nil {
		return is, err
	}
	chainName := instantChain(size)
	img, err := resolveImage(b.ctx, b.w.repo, chainName, id)
	if err != nil {
		return is, err
	}
	is.BackupID, is.DataBytes, is.Objects = id, bytesFig(img.DataBytes), len(img.Objects)
	is.Span = Figure{Value: imageSpan(&img), Unit: "ratio"}
	ref := s3Target + ":" + chainName + "@" + id
	var pub, create, stage, publish, read, hyd, hydEng, hydCPU, full, fullEng, fullCPU, bare, bareCPU, get, fetchMean []time.Duration
	var stageFetches, fetches []float64
	var readHyd []time.Duration
	var loopRd, loopWr []float64
	for run := range b.o.runs {
		ways := []func() error{
			func() error {
				unix.Sync() // see restoreSet
				r, err := b.instantRun(ref, fmt.Sprintf("pvc-bench-instant-%d-%d", size>>30, run), probeSum)
				pub, create, stage, publish = append(pub, r.published), append(create, r.create), append(stage, r.stage), append(publish, r.publish)
				read, hyd, hydEng = append(read, r.read), append(hyd, r.hydrated), append(hydEng, r.engine)
				hydCPU, fetchMean, readHyd = append(hydCPU, r.cpu), append(fetchMean, r.fetchMean), append(readHyd, r.readHydrated)
				loopRd, loopWr = append(loopRd, float64(r.loopRead)), append(loopWr, float64(r.loopWritten))
				stageFetches, fetches = append(stageFetches, float64(r.stageFetches)), append(fetches, float64(r.fetches))
				return err
			},
			func() error {
				unix.Sync()
				t, cpu, err := b.instantUnstaged(ref, fmt.Sprintf("pvc-bench-instant-bare-%d-%d", size>>30, run))
				bare, bareCPU = append(bare, t), append(bareCPU, cpu)
				return err
			},
			func() error {
				unix.Sync()
				cr, err := restoreRefOn(b.w.drvB, fmt.Sprintf("pvc-bench-instant-full-%d-%d", size>>30, run), ref)
				full, fullCPU = append(full, cr.Wall), append(fullCPU, cr.CPU)
				if eng, ok := b.w.drvB.lastRestoreDuration(); ok && err == nil {
					fullEng = append(fullEng, eng)
				}
				return err
			},
		}
		for i := range ways { // each way first in turn
			if err := ways[(i+run)%len(ways)](); err != nil {
				return is, err
			}
		}
		ts, err := b.w.s3.getOne(b.ctx, &img, run)
		if err != nil {
			return is, err
		}
		get = append(get, ts...)
	}
	is.Published, is.Create, is.Stage, is.Publish = medianSeconds(pub), medianSeconds(create), medianSeconds(stage), medianSeconds(publish)
	is.Read1MiB, is.Hydration, is.FullRestore, is.BlockGet = medianSeconds(read), medianSeconds(hyd), medianSeconds(full), medianSeconds(get)
	is.HydrationEngine, is.FullEngine = medianSeconds(hydEng), medianSeconds(fullEng)
	is.HydrationCPU, is.FullCPU = medianSeconds(hydCPU), medianSeconds(fullCPU)
	is.Read1MiBHydrated = medianSeconds(readHyd)
	is.LoopRead = Figure{Value: median(loopRd), Unit: "B", Samples: loopRd}
	is.LoopWritten = Figure{Value: median(loopWr), Unit: "B", Samples: loopWr}
	is.Unstaged, is.UnstagedCPU, is.FetchMean = medianSeconds(bare), medianSeconds(bareCPU), medianSeconds(fetchMean)
	is.StageFetches, is.Fetches = Figure{Value: median(stageFetches), Unit: "blocks", Samples: stageFetches}, Figure{Value: median(fetches), Unit: "blocks", Samples: fetches}
	unix.Sync()
	is.DB, err = b.instantDBRun(ref, fmt.Sprintf("pvc-bench-instant-db-%d", size>>30))
	return is, err
}

// instantChain is the chain of the source volume of a size: the driver
// names it after the claim (namespace bench).
func instantChain(size int64) string { return "bench/" + instantClaim(size) }

func instantClaim(size int64) string { return fmt.Sprintf("instant-%dgib", size>>30) }

// instantSource creates the source volume of size on node a, writes its
// files, backs it up and returns the backup's id and the sha256 of the
// 1 MiB file. The volume stays (published) until teardown.
func (b *bench) instantSource(size int64) (string, [32]byte, error) {
	d := b.w.drv
	var sum [32]byte
	claim := instantClaim(size)
	vol, err := d.createVolume("pvc-bench-"+claim, size, mountCap(),
		map[string]string{"csi.storage.k8s.io/pvc/name": claim, "csi.storage.k8s.io/pvc/namespace": "bench"}, nil)
	if err != nil {
		return "", sum, err
	}
	mnt, err := d.stagePublish(vol, claim)
	if err != nil {
		return "", sum, err
	}
	t := time.Now()
	g := newGen(b.o.seed+uint64(size>>30), mnt)
	data := b.o.instantData
	per := (data - data/4) / instantDirs &^ 4095
	for i := range instantDirs {
		if err := g.writeLarge(fmt.Sprintf("d%02d/data", i), per, 0); err != nil {
			return "", sum, err
		}
	}
	if err := g.writeLarge(instantDB, data/4&^4095, 0); err != nil {
		return "", sum, err
	}
	probe := g.random(1 << 20)
	sum = sha256.Sum256(probe)
	if err := g.writeFile(instantProbe, probe); err != nil {
		return "", sum, err
	}
	if err := syncFS(mnt); err != nil {
		return "", sum, err
	}
	logf("instant source %s: wrote %.0f MiB in %.1fs", bytesStr(size), float64(data)/mib, time.Since(t).Seconds())
	if _, took, err := d.snapshot("bench-instant-"+claim, vol, true); err != nil {
		return "", sum, err
	} else {
		logf("instant source %s: backed up in %.1fs", bytesStr(size), took.Seconds())
	}
	m, err := b.w.repo.Manifest(b.ctx, instantChain(size), "latest")
	if err != nil {
		return "", sum, err
	}
	return m.ID, sum, nil
}

// instantTimes is one instant restore: CreateVolume, NodeStageVolume and
// NodePublishVolume and their sum; the 1 MiB read after publish; the time
// from CreateVolume until hydration ended.
type instantTimes struct {
	published, create, stage, publish, read, hydrated time.Duration
	engine                                            time.Duration // the driver log's, restore started to hydration done
	cpu                                               time.Duration // the driver's, CreateVolume to hydrated
	// stageFetches and fetches are the blocks fetched by the end of
	// NodeStageVolume and in all; fetchMean their mean latency.
	stageFetches, fetches int64
	fetchMean             time.Duration
	readHydrated          time.Duration // the 1 MiB read again once hydrated, nothing cached
	// loopRead and loopWritten are the bytes the loop device over the
	// FUSE file read and wrote from its attach (NodeStageVolume) to the end
	// of hydration: the mount's, the 1 MiB read's and what ext4 did on its
	// own (the bench writes nothing).
	loopRead, loopWritten int64
}

// instantRun restores ref instantly on node b as name, publishes it, reads
// the 1 MiB file (checked against want), waits for hydration to end, and
// deletes the volume.
func (b *bench) instantRun(ref, name string, want [32]byte) (instantTimes, error) {
	var r instantTimes
	d := b.w.drvB
	n0, sum0, err := d.fetchStats()
	if err != nil {
		return r, err
	}
	cpu0, start := d.cpuTime(), time.Now()
	vol, err := d.createVolume(name, 0, mountCap(), map[string]string{"fromBackup": ref, "restoreMode": "instant"}, nil)
	if err != nil {
		return r, err
	}
	r.create = time.Since(start)
	loops := loopStats()
	mnt, stage, publish, err := d.stagePublishTimed(vol, name)
	if err != nil {
		return r, err
	}
	r.published, r.stage, r.publish = time.Since(start), stage, publish
	if n, _, err := d.fetchStats(); err == nil {
		r.stageFetches = n - n0
	}
	t := time.Now()
	got, err := os.ReadFile(filepath.Join(mnt, instantProbe))
	r.read = time.Since(t)
	if err != nil {
		return r, err
	}
	if s := sha256.Sum256(got); !bytes.Equal(s[:], want[:]) {
		return r, fmt.Errorf("instant restore %s: %s read back with another sha256 than written", name, instantProbe)
	}
	if err := d.waitHydrated(vol, nil); err != nil {
		return r, err
	}
	r.hydrated, r.cpu = time.Since(start), d.cpuTime()-cpu0
	if rd, wr, ok := loopIO(d.instantFile(vol), loops); ok {
		r.loopRead, r.loopWritten = rd, wr
	}
	if r.readHydrated, err = readDirect(filepath.Join(mnt, instantProbe), d.instantFile(vol)); err != nil {
		return r, err
	}
	n, total, err := d.fetchStats()
	if err != nil {
		return r, err
	}
	if r.fetches = n - n0; r.fetches > 0 {
		r.fetchMean = (total - sum0) / time.Duration(r.fetches)
	}
	r.engine, _ = d.logSpan(vol, `"restore started"`, `"hydration done"`)
	return r, d.unstageDelete(vol, name)
}

// instantUnstaged restores ref instantly and waits for hydration without
// staging the volume: the hydration alone, no filesystem served over it.
// It returns the time from CreateVolume and the driver's CPU time.
func (b *bench) instantUnstaged(ref, name string) (time.Duration, time.Duration, error) {
	d := b.w.drvB
	cpu0, start := d.cpuTime(), time.Now()
	vol, err := d.createVolume(name, 0, mountCap(), map[string]string{"fromBackup": ref, "restoreMode": "instant"}, nil)
	if err != nil {
		return 0, 0, err
	}
	if err := d.waitHydrated(vol, nil); err != nil {
		return 0, 0, err
	}
	t, cpu := time.Since(start), d.cpuTime()-cpu0
	return t, cpu, d.deleteVolume(vol)
}

// instantDBRun restores ref instantly once more and, from the moment it is
// published, reads random 4 KiB blocks of the database file with O_DIRECT
// for dbDuration or until hydration ends, whichever is first; then again
// for dbDuration once hydrated, for comparison (still through FUSE).
func (b *bench) instantDBRun(ref, name string) (DBLoad, error) {
	var db DBLoad
	d := b.w.drvB
	vol, err := d.createVolume(name, 0, mountCap(), map[string]string{"fromBackup": ref, "restoreMode": "instant"}, nil)
	if err != nil {
		return db, err
	}
	mnt, _, _, err := d.stagePublishTimed(vol, name)
	if err != nil {
		return db, err
	}
	path := filepath.Join(mnt, instantDB)
	hydrated := make(chan error, 1)
	stop := make(chan struct{})
	go func() { hydrated <- d.waitHydrated(vol, stop) }()
	lat, werr := randomReads(path, dbDuration, hydrated)
	close(stop)
	db.Reads, db.Seconds, db.Slow = len(lat), seconds(sum(lat)), slower(lat, time.Millisecond)
	db.P50, db.P99, db.Max = percentile(lat, 0.5), percentile(lat, 0.99), percentile(lat, 1)
	if done, total, ok := d.hydrationProgress(vol); ok && total > 0 {
		db.HydratedAtEnd = Figure{Value: float64(done) / float64(total), Unit: "ratio"}
	} else {
		db.HydratedAtEnd = Figure{Value: 1, Unit: "ratio"}
	}
	if werr != nil {
		return db, werr
	}
	if err := d.waitHydrated(vol, nil); err != nil {
		return db, err
	}
	// The loop device over the FUSE file is buffered: O_DIRECT stops at
	// it, and the FUSE file's page cache would serve the pages read above.
	if err := dropCache(d.instantFile(vol)); err != nil {
		return db, err
	}
	after, err := randomReads(path, dbDuration, nil)
	if err != nil {
		return db, err
	}
	db.AfterP50, db.AfterP99 = percentile(after, 0.5), percentile(after, 0.99)
	return db, d.unstageDelete(vol, name)
}

// instantFile is the FUSE file the driver serves volume id's instant
// image as (volume.Manager.InstantFile: STATE/instant/ID/image).
func (d *driverProc) instantFile(id string) string {
	return filepath.Join(d.e.tmp, d.nodeID+"-state", "instant", id, "image")
}

// dbDuration is how long each random-read workload runs.
const dbDuration = 3 * time.Second

// imageSpan is the offset of the end of the image's last data block over
// the image's size: near 1, the data lies across the whole volume.
func imageSpan(img *backupImage) float64 {
	var last int64
	for _, o := range img.Objects {
		for _, off := range o.Offsets {
			last = max(last, off+img.BlockSize)
		}
	}
	if img.SizeBytes == 0 {
		return 0
	}
	return float64(min(last, img.SizeBytes)) / float64(img.SizeBytes)
}
