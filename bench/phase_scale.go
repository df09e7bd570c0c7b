package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Chains of the scale test.
const (
	scaleSmall = "bench/scale-small"
	scaleLarge = "bench/scale-large"
)

// scale backs up the same data (incompressible, every 4 MiB distinct) as
// a volume of its size and as one 64 times larger (the data in 64 pieces,
// one at the start of each 64th, holes between), with chainvolctl backup
// create, and restores both with chainvolctl, -runs times each (at least 5): a
// restore's time should follow the allocated bytes, not the volume size.
func (b *bench) scale() error {
	n := b.o.scaleData
	if n == 0 {
		return nil
	}
	dir := filepath.Join(b.w.e.pool, "scale")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	small, large := filepath.Join(dir, "small.img"), filepath.Join(dir, "large.img")
	if err := scaleImages(small, large, n, b.o.seed); err != nil {
		return err
	}
	ids := map[string]string{}
	for chainName, img := range map[string]string{scaleSmall: small, scaleLarge: large} {
		id, _, err := b.ctlBackup(img, chainName)
		if err != nil {
			return err
		}
		ids[chainName] = id
	}
	var ts, tl []time.Duration
	for run := range max(b.o.runs, 5) { // five: the two medians make a ratio
		for _, c := range []string{scaleSmall, scaleLarge} {
			unix.Sync() // see restoreSet
			b.profile = b.profilePath(run, "ctl-restore-"+filepath.Base(c))
			cr, err := b.restoreCtlChain(c, ids[c])
			b.profile = ""
			if err != nil {
				return err
			}
			if c == scaleSmall {
				ts = append(ts, cr.Wall)
			} else {
				tl = append(tl, cr.Wall)
			}
		}
	}
	sc := &Scale{Data: bytesFig(n), Small: medianSeconds(ts), Large: medianSeconds(tl)}
	sc.Ratio = Figure{Value: sc.Large.Value / sc.Small.Value, Unit: "ratio"}
	b.res.Scale = sc
	logf("scale: %s of data restored in %.2fs from a %s volume, %.2fs from a %s one", bytesStr(n), sc.Small.Value,
		bytesStr(n), sc.Large.Value, bytesStr(64*n))
	return nil
}

// scaleImages writes n bytes of seeded random data to small (size n) and,
// in 64 pieces one every n bytes, to large (size 64n, sparse).
func scaleImages(small, large string, n int64, seed uint64) error {
	fs, err := os.Create(small)
	if err != nil {
		return err
	}
	defer fs.Close()
	fl, err := os.Create(large)
	if err != nil {
		return err
	}
	defer fl.Close()
	if err := fl.Truncate(64 * n); err != nil {
		return err
	}
	rng := rand.NewChaCha8([32]byte{byte(seed), 16})
	piece := n / 64
	buf := make([]byte, 4<<20)
	for off := int64(0); off < n; off += int64(len(buf)) {
		k := min(int64(len(buf)), n-off)
		_, _ = rng.Read(buf[:k])
		if _, err := fs.WriteAt(buf[:k], off); err != nil {
			return err
		}
		// Byte off of the data goes to piece off/piece, at the start of its 64th.
		for p := off; p < off+k; {
			i, in := p/piece, p%piece
			m := min(off+k-p, piece-in)
			if _, err := fl.WriteAt(buf[p-off:p-off+m], i*n+in); err != nil {
				return err
			}
			p += m
		}
	}
	if err := fs.Sync(); err != nil {
		return err
	}
	return fl.Sync()
}

// ctlBackup backs image up as the next backup of chainName with
// chainvolctl backup create and returns its id.
func (b *bench) ctlBackup(image, chainName string) (string, childRun, error) {
	out, cr, err := runChild(b.ctl("backup", "create", "--from", image, "--chain", s3Target+":"+chainName))
	if err != nil {
		return "", cr, fmt.Errorf("chainvolctl backup create: %w", err)
	}
	id, err := jsonField(out, "id")
	return id, cr, err
}
