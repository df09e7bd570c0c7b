package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// flatChain is where the long chain's newest image is backed up again as
// one full backup: the same bytes as the long chain's tip in one link.
const flatChain = "bench/flat"

// chainLength restores the newest backup of chains of 1, 11 and
// longChain links. The 1- and 11-link figures are the base and newest
// restores already measured (restoring a chain's first backup reads only
// that manifest); the long chain grows the same chain with more rounds of
// changes, backed up by chainvol only. Since the volume's data grows with
// the rounds, the long chain's tip is also backed up as a 1-link chain of
// its own (bench/flat) and restored: the same bytes, 1 link against many.
func (b *bench) chainLength() error {
	for _, rs := range b.res.Restores {
		b.res.ChainLength = append(b.res.ChainLength, ChainLink{Chain: chain, Links: rs.Links, BackupID: rs.BackupID,
			DataBytes: rs.DataBytes, Ctl: rs.Ctl, Limit: rs.Limit})
	}
	slices.SortFunc(b.res.ChainLength, func(a, b ChainLink) int { return a.Links - b.Links })
	if b.o.longChain <= len(b.ids) {
		return nil
	}
	t := time.Now()
	for r := len(b.ids); r < b.o.longChain; r++ {
		if _, err := b.changeRound(r); err != nil {
			return err
		}
		if err := b.backupRound(r, &BackupRun{}, nil); err != nil {
			return err
		}
	}
	logf("chain grown to %d links in %.0fs", len(b.ids), time.Since(t).Seconds())
	long, err := b.chainRestore(chain, b.ids[len(b.ids)-1])
	if err != nil {
		return err
	}
	if long.Links != b.o.longChain {
		return fmt.Errorf("backup %s resolves through %d links, want %d", long.BackupID, long.Links, b.o.longChain)
	}
	flatID, err := b.flatBackup()
	if err != nil {
		return err
	}
	flat, err := b.chainRestore(flatChain, flatID)
	if err != nil {
		return err
	}
	b.res.ChainLength = append(b.res.ChainLength, long, flat)
	return nil
}

// chainRestore restores a chain's backup with chainvolctl, runs times
// beside the limit, and returns the medians.
func (b *bench) chainRestore(chainName, id string) (ChainLink, error) {
	img, err := resolveImage(b.ctx, b.w.repo, chainName, id)
	if err != nil {
		return ChainLink{}, err
	}
	var ctl, lim []time.Duration
	for range max(b.o.runs, 5) { // the goal is a median of at least 5
		unix.Sync() // see restoreSet
		l, err := b.limit(&img, false)
		if err != nil {
			return ChainLink{}, err
		}
		lim = append(lim, l.null)
		cr, err := b.restoreCtlChain(chainName, id)
		if err != nil {
			return ChainLink{}, err
		}
		ctl = append(ctl, cr.Wall)
	}
	cl := ChainLink{Chain: chainName, Links: img.Links, BackupID: id, DataBytes: bytesFig(img.DataBytes),
		Ctl: medianSeconds(ctl), Limit: medianSeconds(lim)}
	logf("restore of %s@%s (%d links): chainvolctl %.1fs, null restore %.1fs", chainName, id, cl.Links, cl.Ctl.Value, cl.Limit.Value)
	return cl, nil
}

// flatBackup backs the newest snapshot image up as a full backup of a new
// chain with chainvolctl backup create, a child whose RSS and CPU are its own.
func (b *bench) flatBackup() (string, error) {
	id, cr, err := b.ctlBackup(b.lastImage, flatChain)
	if err != nil {
		return "", err
	}
	b.res.FlatBackup = &FlatBackup{Time: seconds(cr.Wall), CPU: seconds(cr.CPU), PeakRSS: bytesFig(cr.PeakRSS)}
	logf("chainvolctl backup create of the newest image: %.1fs, peak RSS %.0f MiB", cr.Wall.Seconds(), float64(cr.PeakRSS)/(1<<20))
	return id, nil
}

// ctl is chainvolctl with the bench's target, credentials and state
// directory, answering in JSON.
func (b *bench) ctl(args ...string) *exec.Cmd {
	base := []string{"--target", s3Target + "=" + b.w.s3.chainvolURL(), "--credentials-file", b.w.creds,
		"--state-dir", filepath.Join(b.w.e.tmp, "ctl-state"), "-o", "json"}
	return exec.Command(b.w.e.bin("chainvolctl"), append(base, args...)...)
}

// jsonField is the string field key of a JSON object printed by chainvolctl.
func jsonField(out, key string) (string, error) {
	var r map[string]any
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		return "", fmt.Errorf("chainvolctl printed %q: %w", out, err)
	}
	v, _ := r[key].(string)
	if v == "" {
		return "", fmt.Errorf("chainvolctl printed no %s: %q", key, out)
	}
	return v, nil
}
