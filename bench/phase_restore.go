package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// restores restores the newest backup (the end of the chain) and the full
// base every way: CreateVolume with fromBackup on node b (which holds no
// local snapshot of the chain, so a full restore), chainvolctl restore and
// restic restore, beside the limits measured in between (the null restore,
// GET only, write only).
func (b *bench) restores() error {
	sets := []struct {
		name string
		idx  int
	}{{"newest", len(b.ids) - 1}, {"base", 0}}
	for _, s := range sets {
		rs, err := b.restoreSet(s.name, s.idx)
		if err != nil {
			return err
		}
		b.res.Restores = append(b.res.Restores, rs)
		logf("restore %s (%d links): CreateVolume %.1fs, chainvolctl %.1fs, restic %.1fs, null restore %.1fs (GET %.1fs, write %.1fs)",
			s.name, rs.Links, rs.CSI.Value, rs.Ctl.Value, rs.Restic.Value, rs.Limit.Value, rs.Get.Value, rs.Write.Value)
	}
	return nil
}

func (b *bench) restoreSet(name string, idx int) (RestoreSet, error) {
	id := b.ids[idx]
	rs := RestoreSet{Name: name, BackupID: id}
	img, err := resolveImage(b.ctx, b.w.repo, chain, id)
	if err != nil {
		return rs, err
	}
	rs.Links, rs.DataBytes = img.Links, bytesFig(img.DataBytes)
	var csiT, ctlT, getT, writeT, bufT, dirT, limT, pairT, csiCPU, ctlCPU, ctlSrv, ctlBusy []time.Duration
	var csiRSS, ctlRSS []int64
	// The ways alternate within each run, so that a burst of load from
	// elsewhere on the machine hits all of them rather than one.
	for run := range b.o.runs {
		// Earlier phases leave GBs of dirty page cache (the uploads the S3
		// server stored); each run starts with it written back, so that
		// no tool pays for another's writeback.
		unix.Sync()
		l, err := b.limit(&img, true)
		if err != nil {
			return rs, err
		}
		w := min(l.buffered, l.direct)
		getT, writeT, limT = append(getT, l.get), append(writeT, w), append(limT, l.null)
		bufT, dirT, pairT = append(bufT, l.buffered), append(dirT, l.direct), append(pairT, max(l.get, w))
		csi := func() error {
			cr, err := b.restoreCSI(fmt.Sprintf("pvc-bench-restore-%s-%d", name, run), id)
			logf("CreateVolume restore %s@%s: %.2fs, driver CPU %.2fs", chain, id, cr.Wall.Seconds(), cr.CPU.Seconds())
			csiT, csiRSS, csiCPU = append(csiT, cr.Wall), append(csiRSS, cr.PeakRSS), append(csiCPU, cr.CPU)
			return err
		}
		ctl := func() error {
			srv0, busy0 := procCPU(b.w.s3.pid), machineBusy()
			b.profile = b.profilePath(run, "ctl-restore-"+name)
			cr, err := b.restoreCtl(id)
			b.profile = ""
			ctlT, ctlRSS, ctlCPU = append(ctlT, cr.Wall), append(ctlRSS, cr.PeakRSS), append(ctlCPU, cr.CPU)
			ctlSrv, ctlBusy = append(ctlSrv, procCPU(b.w.s3.pid)-srv0), append(ctlBusy, machineBusy()-busy0)
			return err
		}
		if err := alternate(run, csi, ctl); err != nil {
			return rs, err
		}
	}
	rs.ObjectBytes = bytesFig(img.ObjectBytes)
	rs.CSI, rs.CSIPeakRSS, rs.CSICPU = medianSeconds(csiT), maxBytes(csiRSS), medianSeconds(csiCPU)
	rs.Ctl, rs.CtlPeakRSS, rs.CtlCPU = medianSeconds(ctlT), maxBytes(ctlRSS), medianSeconds(ctlCPU)
	rs.CtlServerCPU, rs.CtlMachineCPU = medianSeconds(ctlSrv), medianSeconds(ctlBusy)
	rs.Get, rs.Write, rs.Limit = medianSeconds(getT), medianSeconds(writeT), medianSeconds(limT)
	rs.GetOrWrite = medianSeconds(pairT)
	rs.WriteBuffered, rs.WriteDirect = medianSeconds(bufT), medianSeconds(dirT)
	var resT, resCPU, resSrv []time.Duration
	var resRSS []int64
	for range b.o.resticRuns {
		unix.Sync()
		srv0 := procCPU(b.w.s3.pid)
		cr, err := b.restoreRestic(b.resticS[idx])
		if err != nil {
			return rs, err
		}
		resT, resRSS, resCPU = append(resT, cr.Wall), append(resRSS, cr.PeakRSS), append(resCPU, cr.CPU)
		resSrv = append(resSrv, procCPU(b.w.s3.pid)-srv0)
	}
	rs.Restic, rs.ResticRSS, rs.ResticCPU = medianSeconds(resT), maxBytes(resRSS), medianSeconds(resCPU)
	rs.ResticServerCPU = medianSeconds(resSrv)
	return rs, nil
}

// alternate runs the timed ways of one run, each after a sync, in turn
// first: the pool is a loop device over a host file without direct I/O, so
// whatever ran before leaves its writes to the host's writeback, and the
// way that always ran second paid for it (chainvolctl, second until
// session 10).
func alternate(run int, ways ...func() error) error {
	for i := range ways {
		unix.Sync()
		if err := ways[(run+i)%len(ways)](); err != nil {
			return err
		}
	}
	return nil
}

// profilePath is where the CPU profile (.pprof) and the execution trace
// (.trace) of a run's chainvolctl restore go (the first run only, with
// -profile), less the extension, or "" for none.
func (b *bench) profilePath(run int, name string) string {
	if run != 0 || b.o.profileDir == "" {
		return ""
	}
	if err := os.MkdirAll(b.o.profileDir, 0o755); err != nil {
		logf("-profile: %v", err)
		return ""
	}
	return filepath.Join(b.o.profileDir, name)
}

// limitRun is one run of a restore's limits.
type limitRun struct {
	get, buffered, direct time.Duration // GET only; write only, page cache and O_DIRECT
	null                  time.Duration // the null restore: the limit
}

// limit measures, for one restore, the null restore of the same objects
// (the limit a restore is held against) and, with parts, the plain
// parallel GET of every object and the plain sequential write of the data
// bytes to the pool, both through the page cache and with O_DIRECT.
func (b *bench) limit(img *backupImage, parts bool) (limitRun, error) {
	var l limitRun
	var err error
	if l.null, err = b.w.s3.nullRestore(b.ctx, img, filepath.Join(b.w.e.pool, "limit-null.img")); err != nil || !parts {
		return l, err
	}
	if l.get, err = b.w.s3.getAll(b.ctx, img); err != nil {
		return l, err
	}
	if b.buf == nil {
		b.buf = randomBuf()
	}
	path := filepath.Join(b.w.e.pool, "limit-write.img")
	if l.buffered, err = writeSeq(path, img.DataBytes, b.buf, false); err != nil {
		return l, err
	}
	l.direct, err = writeSeq(path, img.DataBytes, b.buf, true)
	return l, err
}

// restoreCSI is CreateVolume with fromBackup, timed until the volume is
// returned ready, with the driver's peak RSS and CPU time over the call;
// the volume is deleted after.
func (b *bench) restoreCSI(name, id string) (childRun, error) {
	return b.restoreCSIOn(b.w.drvB, name, id)
}

// restoreCSIOn is restoreCSI on the node of driver d.
func (b *bench) restoreCSIOn(d *driverProc, name, id string) (childRun, error) {
	return restoreRefOn(d, name, s3Target+":"+chain+"@"+id)
}

// restoreRefOn is restoreCSIOn of a backup reference TARGET:CHAIN@ID.
func restoreRefOn(d *driverProc, name, ref string) (childRun, error) {
	d.resetPeak()
	cpu0 := d.cpuTime()
	start := time.Now()
	vol, err := d.createVolume(name, 0, mountCap(), map[string]string{"fromBackup": ref}, nil)
	cr := childRun{Wall: time.Since(start), CPU: d.cpuTime() - cpu0, PeakRSS: d.peakRSS()}
	if err != nil {
		return cr, err
	}
	return cr, d.deleteVolume(vol)
}

// restoreCtl is `chainvolctl restore` onto a new image file in the pool.
func (b *bench) restoreCtl(id string) (childRun, error) { return b.restoreCtlChain(chain, id) }

// restoreCtlChain is restoreCtl of any chain of the target.
func (b *bench) restoreCtlChain(chainName, id string) (childRun, error) {
	dir := filepath.Join(b.w.e.pool, "ctl-restore")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return childRun{}, err
	}
	defer os.RemoveAll(dir)
	to := filepath.Join(dir, "vol.img")
	c := b.ctl("restore", s3Target+":"+chainName+"@"+id, "--to", to)
	if b.profile != "" {
		c.Env = append(os.Environ(), "CHAINVOL_CPUPROFILE="+b.profile+".pprof", "CHAINVOL_TRACE="+b.profile+".trace")
	}
	out, cr, err := runChild(c)
	if err != nil {
		return cr, fmt.Errorf("chainvolctl restore: %w", err)
	}
	var r struct {
		WrittenBytes int64   `json:"writtenBytes"`
		Engine       float64 `json:"durationSeconds"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.WrittenBytes == 0 {
		return cr, fmt.Errorf("chainvolctl restore printed %q", out)
	}
	// The engine's own time against the process's: what the command
	// costs around the restore (start, target, resolve, rename).
	logf("chainvolctl restore %s@%s: %.2fs, engine %.2fs, CPU %.2fs", chainName, id, cr.Wall.Seconds(), r.Engine, cr.CPU.Seconds())
	return cr, nil
}

// restoreRestic is `restic restore` of the same image into the pool.
func (b *bench) restoreRestic(snap string) (childRun, error) {
	dir := filepath.Join(b.w.e.pool, "restic-restore")
	defer os.RemoveAll(dir)
	return b.w.restic.restore(snap, dir)
}
