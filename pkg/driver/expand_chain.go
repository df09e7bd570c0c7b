package driver

import (
	"context"
	"errors"
	"time"

	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/backend"
	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// chainReadTimeout bounds the read of one chain's block size from its
// target while a volume grows: an unreachable target must not hold the
// resize up, and CreateSnapshot checks again (volume.CheckChainFits).
const chainReadTimeout = 5 * time.Second

// checkGrowFits refuses growing volume lv to size bytes past what a chain
// holding its backups can hold, s3chain.MaxVolumeSize of the chain's
// block size, which its first backup fixed (FORMAT.md §1): every later
// backup of the volume would fail for good. The answer is OutOfRange with
// the limit in bytes and the way out, a new chain (CSI spec
// "ControllerExpandVolume" and "NodeExpandVolume": "the capacity range is
// not allowed by the Plugin"). The chains are those of volumeChains; a
// block size that cannot be read is no reason to refuse.
func (d *core) checkGrowFits(ctx context.Context, lv backend.LVol, size int64, secrets map[string]string) error {
	for ref, bs := range d.volumeChains(ctx, lv) {
		if bs == 0 {
			bs = d.readChainBlockSize(ctx, ref, secrets)
		}
		if bs > 0 && size > s3chain.MaxVolumeSize(bs) {
			return volumeError("", volume.ChainFull(volume.ClassOutOfRange, ref.Chain, size, bs))
		}
	}
	return nil
}

// volumeChains returns the chains (Target and Chain of a target.Ref)
// lv's later backups go into, each with its block size in bytes when this
// node knows it (0 otherwise): the chains of lv's backup snapshots in the
// pool (the latest uploaded base of each stays while lv exists, volume/bases.go,
// with the image record of its manifest), and the chain lv was restored
// from when it is lv's own chain (a claim re-created under its old name).
// A volume without either has no chain yet: its first backup picks a block
// size that fits (s3chain newChainBlockSize).
func (d *core) volumeChains(ctx context.Context, lv backend.LVol) map[target.Ref]int64 {
	chains := map[target.Ref]int64{}
	if r, err := volume.Of(lv).RestoredFrom.Ref(); err == nil && r.Chain == volume.ChainOf(lv) {
		chains[d.chainKey(r)] = 0
	}
	snaps, err := d.pool.List(ctx, backend.KindSnapshot)
	if err != nil {
		klog.ErrorS(err, "list the backups of a volume to check its chain's size limit", "volume", lv.ID)
		return chains
	}
	for _, s := range snaps {
		rec := volume.Of(s)
		r, err := rec.BackupRef.Ref()
		if err != nil || s.SourceID != lv.ID {
			continue
		}
		k := d.chainKey(r)
		bs := chains[k]
		if im, err := s3chain.ReadImage(d.vols.ImageRecordPath(s.ID)); err == nil && im.Chain == r.Chain {
			bs = im.BlockSize
		} else if rec.Upload == volume.Uploaded && rec.BlockSize > 0 {
			bs = rec.BlockSize // asked for and uploaded: the chain's
		}
		chains[k] = bs
	}
	return chains
}

// chainKey is a chain's key in volumeChains: its target's name resolved
// ("" is the default target) and the chain.
func (d *core) chainKey(r target.Ref) target.Ref {
	if t, err := d.targets.Lookup(r.Target); err == nil {
		r.Target = t.Name
	}
	return target.Ref{Target: r.Target, Chain: r.Chain}
}

// readChainBlockSize reads the block size of chain ref from its target
// within chainReadTimeout; 0 when the chain has no config or the target
// cannot be read (logged).
func (d *core) readChainBlockSize(ctx context.Context, ref target.Ref, secrets map[string]string) int64 {
	ctx, cancel := context.WithTimeout(ctx, chainReadTimeout)
	defer cancel()
	repo, err := d.targets.Open(ctx, ref.Target, secrets)
	var bs int64
	if err == nil {
		bs, err = repo.ChainBlockSize(ctx, ref.Chain)
	}
	if err != nil && !errors.Is(err, s3chain.ErrBackupNotFound) {
		klog.InfoS("cannot read a chain's block size to check a volume's growth; its next backup checks it", "chain", ref.String(), "err", err)
	}
	return bs
}
