package main

import (
	"fmt"
	"runtime"
)

func ptr(x float64) *float64 { return &x }
func okp(b bool) *bool       { return &b }

// ratio is a/b, nil when b is zero (nothing to compare with).
func ratio(a float64, b *float64) *float64 {
	if b == nil || *b == 0 {
		return nil
	}
	return ptr(a / *b)
}

// line builds a row; restic and limit may be nil.
func line(name, unit string, cv float64, restic, limit *float64) Line {
	return Line{Name: name, Unit: unit, Chainvol: cv, Restic: restic, Limit: limit,
		VsRestic: ratio(cv, restic), VsLimit: ratio(cv, limit)}
}

const mib = 1 << 20

// lines turns the results into the table's rows, each with the team's
// target and whether it was met. Time ratios are chainvol/other: below 1
// means chainvol is faster.
func lines(r *Results) []Line {
	out := backupLines(r)
	var l Line
	for _, rs := range r.Restores {
		what := fmt.Sprintf("restore %s (%d links, %.0f MiB)", rs.Name, rs.Links, rs.DataBytes.Value/mib)
		for _, w := range []struct {
			how string
			t   Figure
		}{{"CreateVolume", rs.CSI}, {"chainvolctl", rs.Ctl}} {
			l = line(what+" "+w.how, "s", w.t.Value, ptr(rs.Restic.Value), ptr(rs.Limit.Value))
			l.Target = "c/limit (null restore) <= 1.3, c/restic <= 0.5"
			l.Met = okp(*l.VsRestic <= 0.5 && *l.VsLimit <= 1.3)
			out = append(out, l)
		}
		out = append(out, limitLines(rs)...)
		l = line(fmt.Sprintf("restore %s CPU time chainvolctl (user+sys)", rs.Name), "s", rs.CtlCPU.Value, ptr(rs.ResticCPU.Value), nil)
		out = append(out, l)
		out = append(out, cpuBoundLine(rs))
		l = line(fmt.Sprintf("restore %s peak RSS CreateVolume (driver)", rs.Name), "MiB", rs.CSIPeakRSS.Value/mib, ptr(rs.ResticRSS.Value/mib), nil)
		l.Target, l.Met = "<= 256 MiB", okp(rs.CSIPeakRSS.Value <= 256*mib)
		out = append(out, l)
		l = line(fmt.Sprintf("restore %s peak RSS chainvolctl", rs.Name), "MiB", rs.CtlPeakRSS.Value/mib, ptr(rs.ResticRSS.Value/mib), nil)
		l.Target, l.Met = "<= 256 MiB", okp(rs.CtlPeakRSS.Value <= 256*mib)
		out = append(out, l)
	}
	out = append(out, localBaseLines(r.LocalBase)...)
	out = append(out, chainLines(r.ChainLength)...)
	out = append(out, scaleLines(r.Scale)...)
	out = append(out, snapLines(r.SnapClone)...)
	return append(out, instantLines(r.Instant)...)
}

// backupLines: the full backup and the incrementals, none when the run
// took no backup (-only without backups).
func backupLines(r *Results) []Line {
	f := r.Full
	if f.Chainvol.Time.Value == 0 {
		return nil
	}
	var out []Line
	l := line("full backup time; limit: null backup", "s", f.Chainvol.Time.Value, ptr(f.Restic.Time.Value), ptr(f.NullBackup.Value))
	l.Target, l.Met = "chainvol/restic <= 0.4", okp(*l.VsRestic <= 0.4)
	out = append(out, l)
	out = append(out, line("full backup throughput", "MB/s", f.Chainvol.Throughput.Value, ptr(f.Restic.Throughput.Value), nil))
	out = append(out, line("full backup bytes stored", "MiB", f.Chainvol.Uploaded.Value/mib, ptr(f.Restic.Uploaded.Value/mib), nil))
	out = append(out, line("full backup peak RSS (driver)", "MiB", f.Chainvol.PeakRSS.Value/mib, ptr(f.Restic.PeakRSS.Value/mib), nil))
	out = append(out, line("full backup CPU time (user+sys)", "s", f.Chainvol.CPU.Value, ptr(f.Restic.CPU.Value), nil))
	if fb := r.FlatBackup; fb != nil {
		out = append(out, line("full backup by chainvolctl (newest image) time", "s", fb.Time.Value, nil, nil))
		l = line("full backup by chainvolctl peak RSS", "MiB", fb.PeakRSS.Value/mib, ptr(f.Restic.PeakRSS.Value/mib), nil)
		out = append(out, l)
	}

	if len(r.Incremental) > 0 {
		var ct, rt, cu, ru, worst []float64
		for _, in := range r.Incremental {
			ct, rt = append(ct, in.Chainvol.Time.Value), append(rt, in.Restic.Time.Value)
			cu, ru = append(cu, in.Chainvol.Uploaded.Value/mib), append(ru, in.Restic.Uploaded.Value/mib)
			worst = append(worst, in.ChainvolVsFull.Value)
		}
		l = line(fmt.Sprintf("incremental backup time (median of %d)", len(ct)), "s", median(ct), ptr(median(rt)), nil)
		l.Target = fmt.Sprintf("chainvol incr/full <= 0.04 (median %.3f, worst %.3f)", median(worst), maxF(worst))
		l.Met = okp(median(worst) <= 0.04)
		out = append(out, l)
		l = line("incremental bytes uploaded (median)", "MiB", median(cu), ptr(median(ru)), nil)
		l.Target, l.Met = "chainvol/restic <= 1", okp(*l.VsRestic <= 1)
		out = append(out, l)
		var eng []float64
		for _, in := range r.Incremental {
			eng = append(eng, in.Chainvol.Engine.Value)
		}
		out = append(out, line("incremental upload alone, from driver log (median)", "s", median(eng), nil, nil))
	}
	if s := r.StoredAfterChain; s != nil {
		l = line(fmt.Sprintf("bytes stored, full + %d incrementals", len(r.Incremental)), "MiB", s["chainvol"].Value/mib, ptr(s["restic"].Value/mib), nil)
		l.Target, l.Met = "chainvol/restic <= 1", okp(*l.VsRestic <= 1)
		out = append(out, l)
	}
	return out
}

// localBaseLines: a restore on the node holding another backup's local
// snapshot, against the limit of a full restore of the same backup.
func localBaseLines(lb *LocalBase) []Line {
	if lb == nil {
		return nil
	}
	l := line(fmt.Sprintf("restore on a node holding the snapshot %d backups apart (%.0f of %.0f MiB differ), CreateVolume", lb.Distance, lb.DiffBytes.Value/mib, lb.ImageBytes.Value/mib),
		"s", lb.CSI.Value, nil, ptr(lb.FullLimit.Value))
	if lb.ImageBytes.Value > 0 {
		goal := 1.5*lb.DiffBytes.Value/lb.ImageBytes.Value*lb.FullRestore.Value + 0.2
		l.Target = fmt.Sprintf("<= 1.5 x differing/image x full restore (%.2fs) + 0.2 s = %.2fs", lb.FullRestore.Value, goal)
		l.Met = okp(lb.CSI.Value <= goal)
	}
	eng := line("  the same, restore engine alone (driver log)", "s", lb.Engine.Value, nil, ptr(lb.FullLimit.Value))
	same := line("restore of the backup whose snapshot the node holds, CreateVolume", "s", lb.Same.Value, nil, ptr(lb.FullLimit.Value))
	return []Line{l, eng, same}
}

// limitLines are the parts of a restore's limit as lines of their own:
// GET only, write only, and the larger of the two (the limit before the
// null restore, which let GET and write each have the machine).
func limitLines(rs RestoreSet) []Line {
	what := fmt.Sprintf("  restore %s limit parts:", rs.Name)
	return []Line{
		line(what+" GET only ("+fmt.Sprint(limitWorkers)+" streams)", "s", rs.Get.Value, nil, ptr(rs.Limit.Value)),
		line(what+" write only (faster of O_DIRECT and buffered)", "s", rs.Write.Value, nil, ptr(rs.Limit.Value)),
		line(what+" max(GET, write)", "s", rs.GetOrWrite.Value, nil, ptr(rs.Limit.Value)),
	}
}

// scaleLines: the same data restored from a volume 64 times larger.
func scaleLines(sc *Scale) []Line {
	if sc == nil {
		return nil
	}
	small := line(fmt.Sprintf("restore %s of data in a %s volume, chainvolctl", bytesStr(int64(sc.Data.Value)), bytesStr(int64(sc.Data.Value))),
		"s", sc.Small.Value, nil, nil)
	large := line(fmt.Sprintf("restore %s of data in a %s volume, chainvolctl", bytesStr(int64(sc.Data.Value)), bytesStr(64*int64(sc.Data.Value))),
		"s", sc.Large.Value, nil, nil)
	large.Target, large.Met = fmt.Sprintf("vs the %s volume <= 1.2 (is %.2f)", bytesStr(int64(sc.Data.Value)), sc.Ratio.Value), okp(sc.Ratio.Value <= 1.2)
	return []Line{small, large}
}

// chainLines compare each chain's restore with a 1-link one: the long
// chain with bench/flat (the same bytes in one link), the others with the
// chain's base (which holds fewer bytes, so the ratio per MiB is shown too).
func chainLines(cls []ChainLink) []Line {
	var out []Line
	var base, flat *ChainLink
	for i := range cls {
		switch {
		case cls[i].Chain == flatChain:
			flat = &cls[i]
		case cls[i].Links == 1:
			base = &cls[i]
		}
	}
	for _, c := range cls {
		l := line(fmt.Sprintf("restore %s, %d-link backup (%.0f MiB), chainvolctl", c.Chain, c.Links, c.DataBytes.Value/mib), "s",
			c.Ctl.Value, nil, ptr(c.Limit.Value))
		one := base
		if flat != nil && c.Chain == chain && c.Links > 1 && c.DataBytes.Value == flat.DataBytes.Value {
			one = flat
		}
		if one != nil && c.Links > 1 {
			r := c.Ctl.Value / one.Ctl.Value
			perByte := r * one.DataBytes.Value / c.DataBytes.Value
			l.Target = fmt.Sprintf("vs %s 1-link <= 1.1 (is %.2f; per MiB %.2f)", one.Chain, r, perByte)
			l.Met = okp(r <= 1.1)
		}
		out = append(out, l)
	}
	return out
}

// snapLines compare each size's snapshot and clone with `cp --reflink`
// of the same data file (the limit column).
func snapLines(scs []SnapClone) []Line {
	var out []Line
	for _, s := range scs {
		for _, w := range []struct {
			what string
			t    Figure
		}{{"snapshot", s.Snapshot}, {"clone", s.Clone}} {
			l := line(fmt.Sprintf("%s of %s volume (%d extents); limit: cp --reflink", w.what, bytesStr(int64(s.Size.Value)), s.Extents),
				"ms", w.t.Value*1e3, nil, ptr(s.CpReflink.Value*1e3))
			if l.VsLimit != nil {
				l.Target, l.Met = "c/limit <= 1.2", okp(*l.VsLimit <= 1.2)
			}
			out = append(out, l)
		}
	}
	return out
}

func maxF(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// cpuBoundLine is the CPU that chainvolctl's restore and the S3 server
// serving it used together, over the wall time: near the machine's core
// count, the restore is CPU-bound (both run on this machine), and its
// wall time cannot fall much below that CPU over the cores.
func cpuBoundLine(rs RestoreSet) Line {
	c := rs.CtlCPU.Value + rs.CtlServerCPU.Value
	r := rs.ResticCPU.Value + rs.ResticServerCPU.Value
	l := line(fmt.Sprintf("restore %s CPU of client + S3 server (user+sys)", rs.Name), "s", c, ptr(r), nil)
	if rs.Ctl.Value > 0 {
		l.Target = fmt.Sprintf("cores busy: these two %.2f, the machine %.2f of %d",
			c/rs.Ctl.Value, rs.CtlMachineCPU.Value/rs.Ctl.Value, runtime.NumCPU())
	}
	return l
}

// instantLines: restoreMode "instant" against its goals (issue 27), each
// size beside a full restore of the same backup; the time to publish of
// every size is also held against the smallest's.
func instantLines(sets []InstantSet) []Line {
	var out []Line
	for i, s := range sets {
		what := fmt.Sprintf("instant restore %s (%.0f MiB data)", bytesStr(int64(s.Size.Value)), s.DataBytes.Value/mib)
		l := line(what+": CreateVolume to published", "s", s.Published.Value, nil, nil)
		l.Target, l.Met = "<= 2 s", okp(s.Published.Value <= 2)
		if i > 0 && sets[0].Published.Value > 0 {
			r := s.Published.Value / sets[0].Published.Value
			l.Target = fmt.Sprintf("<= 2 s, vs %s <= 1.2 (is %.2f)", bytesStr(int64(sets[0].Size.Value)), r)
			l.Met = okp(s.Published.Value <= 2 && r <= 1.2)
		}
		out = append(out, l,
			line("  CreateVolume", "s", s.Create.Value, nil, nil),
			line("  NodeStageVolume", "s", s.Stage.Value, nil, nil),
			line("  NodePublishVolume", "s", s.Publish.Value, nil, nil))
		l = line(what+": read a 1 MiB file after publish; limit: one block's GET", "ms", s.Read1MiB.Value*1e3, nil, ptr(s.BlockGet.Value*1e3))
		goal := 100 + s.BlockGet.Value*1e3
		l.Target, l.Met = fmt.Sprintf("<= 100 ms + one GET = %.0f ms", goal), okp(s.Read1MiB.Value*1e3 <= goal)
		out = append(out, l, line("  the same file once hydrated (O_DIRECT, no cache)", "ms", s.Read1MiBHydrated.Value*1e3, nil, nil))
		l = line(what+": full hydration; limit: full restore", "s", s.Hydration.Value, nil, ptr(s.FullRestore.Value))
		if l.VsLimit != nil {
			l.Target, l.Met = "c/full restore <= 1.2", okp(*l.VsLimit <= 1.2)
		}
		out = append(out, l,
			line("  hydration, driver log (restore started to hydration done)", "s", s.HydrationEngine.Value, nil, ptr(s.FullEngine.Value)),
			line("  hydration, driver CPU time (user+sys)", "s", s.HydrationCPU.Value, nil, ptr(s.FullCPU.Value)),
			line("  hydration of a volume never staged", "s", s.Unstaged.Value, nil, ptr(s.FullRestore.Value)),
			line("  hydration of a volume never staged, driver CPU time", "s", s.UnstagedCPU.Value, nil, ptr(s.FullCPU.Value)),
			line(fmt.Sprintf("  mean block fetch (%.0f fetches, %.0f by the end of NodeStageVolume); limit: one GET", s.Fetches.Value, s.StageFetches.Value),
				"ms", s.FetchMean.Value*1e3, nil, ptr(s.BlockGet.Value*1e3)),
			line("  loop device over FUSE, stage to hydrated: read (mount + the 1 MiB file)", "MiB", s.LoopRead.Value/mib, nil, nil),
			line("  loop device over FUSE, stage to hydrated: written (none by the bench)", "MiB", s.LoopWritten.Value/mib, nil, nil))
		db := s.DB
		l = line(fmt.Sprintf("%s: random 4 KiB reads while hydrating, p50", what), "ms", db.P50.Value*1e3, nil, ptr(db.AfterP50.Value*1e3))
		l.Target = fmt.Sprintf("%d reads in %.1f s (%d over 1 ms), %.0f%% hydrated at the end; limit: hydrated", db.Reads, db.Seconds.Value, db.Slow, db.HydratedAtEnd.Value*100)
		out = append(out, l, line(fmt.Sprintf("%s: random 4 KiB reads while hydrating, p99", what), "ms", db.P99.Value*1e3, nil, ptr(db.AfterP99.Value*1e3)))
	}
	return out
}
