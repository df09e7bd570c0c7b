package s3chain

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// Verify checks that backup backupID ("latest" allowed) of chain can be
// restored, without writing anything: every manifest and hash link, the
// volume digest, and that every block object exists (Stat). With deep it
// also downloads every distinct block and checks its digest. Errors are
// those of Restore: ErrBackupNotFound, ErrChainBroken, ErrWrongKey,
// ErrInvalidManifest, ErrCorruptBlock (naming the block index).
func (r *Repo) Verify(ctx context.Context, chain, backupID string, deep bool) error {
	cfg, path, blocks, err := r.resolve(ctx, chain, backupID)
	if err != nil {
		return err
	}
	tip := path[0]
	first := map[digest]int64{}
	var todo []digest
	for i, d := range blocks {
		if _, ok := first[d]; !ok && !d.isZero() {
			first[d] = int64(i)
			todo = append(todo, d)
		}
	}
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(DefaultWorkers)
	for _, d := range todo {
		g.Go(func() error {
			i := first[d]
			key, err := r.locateBlock(ctx, chain, d, nil)
			if err == nil && deep {
				var obj []byte
				key, obj, err = r.getBlock(ctx, chain, d, key, func(k string) ([]byte, error) {
					return r.store.GetMax(ctx, k, cfg.maxBlockObject())
				})
				if err == nil {
					if _, cerr := cfg.checkBlock(obj, d, tip.blockLen(i), nil); cerr != nil {
						return fmt.Errorf("%w: block %d (object %s): %v", ErrCorruptBlock, i, key, cerr)
					}
				}
			}
			if key == "" {
				key = blockKey(chain, d.String())
			}
			if errors.Is(err, store.ErrObjectNotFound) || errors.Is(err, store.ErrObjectTooLarge) {
				return fmt.Errorf("%w: block %d (object %s) is missing: %w", ErrCorruptBlock, i, key, err)
			}
			if err != nil {
				return fmt.Errorf("check block %d (object %s): %w", i, key, err)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("verify backup %q of chain %q: %w", tip.ID, chain, err)
	}
	return nil
}
