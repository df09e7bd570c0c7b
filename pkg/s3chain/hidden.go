package s3chain

import (
	"context"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// listWithHidden is store.List of prefix, then the keys under it that a
// delete marker hides over a version still under Object Lock retention
// (store.HiddenLister; FORMAT.md §7.4 "Delete markers"): what the chain's
// listings (chains, manifests, state records) see on a versioned lock=
// target, so that a plain DELETE by anybody holding the bucket's keys
// cannot hide a ready backup before its date. extended: objects under
// prefix may have had their retention extended (chain configs). fn may
// see a hidden key after the keys List gave, never one of those twice.
func (r *Repo) listWithHidden(ctx context.Context, prefix string, extended bool, fn func(store.ObjectInfo) error) error {
	if err := r.store.List(ctx, prefix, fn); err != nil {
		return err
	}
	h := store.HiddenListerOf(r.store)
	if h == nil {
		return nil
	}
	seen := map[string]bool{} // a retried listing may repeat keys
	return h.ListHidden(ctx, prefix, extended, func(oi store.ObjectInfo) error {
		if seen[oi.Key] {
			return nil
		}
		seen[oi.Key] = true
		return fn(oi)
	})
}

// readsThrough reports whether the store reads through delete markers
// (store.HiddenLister on a target with lock=): an object a listing does
// not show may still be read, so a listing's absence is not a verdict.
func (r *Repo) readsThrough() bool {
	return r.lock.policy.Enabled() && store.HiddenListerOf(r.store) != nil
}
