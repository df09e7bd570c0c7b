package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// hints say what to do about the errors an operator meets most; they are
// matched with errors.Is on the engines' sentinel errors, never by text.
var hints = []struct {
	err  error
	hint string
}{
	{s3chain.ErrRetained, "the backup is under S3 Object Lock retention (the target's lock= and retain=): it can be removed after the date named; nobody can remove it earlier in COMPLIANCE mode"},
	{store.ErrObjectLocked, "the object is under S3 Object Lock retention until its date; chainvolctl never deletes a locked object"},
	{store.ErrNoObjectLock, "an Object Lock target (lock=, retain=) needs a bucket with Object Lock enabled and no default retention rule (docs/operator.md \"Immutable backups\")"},
	{store.ErrAccessDenied, "check the credentials (--credentials-file or CHAINVOL_ACCESS_KEY_ID / CHAINVOL_SECRET_ACCESS_KEY)"},
	{s3chain.ErrWrongKey, "give the chain's own encryption key (encryptionKey in --credentials-file or CHAINVOL_ENCRYPTION_KEY), or none for a chain that is not encrypted"},
	{store.ErrNoBucket, "create the bucket with 'chainvolctl target init' (when the credentials may create buckets), or fix the bucket name in the target URL s3://BUCKET/PREFIX"},
	{store.ErrBucketTaken, "bucket names are global on AWS: choose another name in the target URL s3://BUCKET/PREFIX"},
	{store.ErrPlainHTTP, "the endpoint serves plain HTTP: add insecure=true to the target URL (s3://BUCKET/PREFIX?endpoint=HOST:PORT&insecure=true)"},
	{store.ErrBadTarget, "check the target URL: file:///abs/dir or s3://BUCKET/PREFIX?endpoint=HOST:PORT&region=R (insecure=true for a plain-HTTP endpoint)"},
	{store.ErrTransient, "the target is unreachable or throttling; retry later or check the endpoint"},
	{s3chain.ErrBackupNotFound, "list what exists with 'chainvolctl chain ls' and 'chainvolctl backup ls CHAIN'"},
	{s3chain.ErrChainBroken, "a backup this one depends on is missing or altered; restore an older backup, or run 'chainvolctl backup verify' on each"},
	{s3chain.ErrCorruptBlock, "a block object is damaged or missing; restore an older backup that does not use it"},
	{s3chain.ErrChainOwned, "a chain is the history of one source (docs/FORMAT.md §3.3): give this source a chain of its own (--chain), or continue the chain on purpose with --take-over (or chainvolctl chain take-over)"},
	{s3chain.ErrVolumeTooLarge, "a chain's block size is fixed by its first backup (docs/FORMAT.md §1) and a chain holds at most 1 Mi blocks: back this source up into a new chain, --chain [TARGET:]NEWCHAIN, with a --block-size large enough"},
	{s3chain.ErrDestinationTooSmall, "restore onto a file or device at least as large as the backup's size (see 'chainvolctl backup show')"},
	{target.ErrUnknownTarget, "name a target given with --target NAME=URL"},
	{target.ErrBadSecret, "fix the credentials file or environment variables"},
}

// explain appends the hint for err's sentinel, if there is one.
func explain(err error) error {
	for _, h := range hints {
		if errors.Is(err, h.err) {
			return fmt.Errorf("%w\nhint: %s", err, h.hint)
		}
	}
	return err
}

// explainCorrupt is explain for an error of backup m, except that a corrupt
// or missing block gets a hint naming the backups of m's chain that do not
// use that block, which still restore. The block is found by its digest,
// which the engines' ErrCorruptBlock messages name (as part of the object
// key, docs/FORMAT.md §6); without one, the hint stays generic.
func (a *app) explainCorrupt(ctx context.Context, repo *s3chain.Repo, m *s3chain.Manifest, err error) error {
	if !errors.Is(err, s3chain.ErrCorruptBlock) {
		return explain(err)
	}
	ms, lerr := repo.Backups(ctx, m.Chain)
	if lerr != nil {
		return explain(err)
	}
	bad := map[string]bool{}
	for _, b := range ms {
		for _, r := range b.Blocks {
			if r.Digest != "" && strings.Contains(err.Error(), r.Digest) {
				bad[r.Digest] = true
			}
		}
	}
	if len(bad) == 0 {
		return explain(err)
	}
	safe, known := backupsAvoiding(ms, bad)
	var hint string
	switch {
	case !known:
		return explain(err)
	case len(safe) == 0:
		hint = fmt.Sprintf("every backup of chain %s uses that block: restore from another copy of the target, if there is one", m.Chain)
	default:
		hint = fmt.Sprintf("these backups of chain %s do not use that block and can be restored: %s (check one with 'chainvolctl backup verify %s@ID --deep')",
			m.Chain, strings.Join(safe, ", "), m.Chain)
	}
	return fmt.Errorf("%w\nhint: %s", err, hint)
}

// backupsAvoiding returns the ids of the backups in ms (a chain's, oldest
// first) whose volume image uses none of the digests in bad. A
// self-contained manifest lists its whole image; any other applies its
// changes to its parent's, which must then be the backup before it. known
// is false when that order does not hold and the answer cannot be given.
func backupsAvoiding(ms []*s3chain.Manifest, bad map[string]bool) (safe []string, known bool) {
	image := map[int64]string{} // block index -> digest of the current backup's image
	uses := 0                   // entries of image whose digest is in bad
	set := func(i int64, d string) {
		if bad[image[i]] {
			uses--
		}
		if d == "" {
			delete(image, i)
		} else {
			image[i] = d
		}
		if bad[d] {
			uses++
		}
	}
	prev := ""
	for _, m := range ms {
		if m.SelfContained() {
			image, uses = map[int64]string{}, 0
		} else if m.ParentID != prev {
			return nil, false
		}
		for _, r := range m.Blocks {
			set(r.Index, r.Digest)
		}
		for i := range image { // a shrunk volume drops its tail
			if i >= m.NumBlocks() {
				set(i, "")
			}
		}
		if uses == 0 {
			safe = append(safe, m.ID)
		}
		prev = m.ID
	}
	return safe, true
}
