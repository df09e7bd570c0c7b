package main

import (
	"errors"
	"fmt"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// hints say what to do about the errors an operator meets most; they are
// matched with errors.Is on the engines' sentinel errors, never by text.
var hints = []struct {
	err  error
	hint string
}{
	{s3chain.ErrAccessDenied, "check the credentials (--credentials-file or CHAINVOL_ACCESS_KEY_ID / CHAINVOL_SECRET_ACCESS_KEY)"},
	{s3chain.ErrWrongKey, "give the chain's encryption key (encryptionKey in --credentials-file or CHAINVOL_ENCRYPTION_KEY)"},
	{s3chain.ErrBadTarget, "check the target URL: file:///abs/dir or s3://BUCKET/PREFIX?endpoint=HOST:PORT&region=R"},
	{s3chain.ErrTransient, "the target is unreachable or throttling; retry later or check the endpoint"},
	{s3chain.ErrBackupNotFound, "list what exists with 'chainvolctl chain ls' and 'chainvolctl backup ls CHAIN'"},
	{s3chain.ErrChainBroken, "a backup this one depends on is missing or altered; restore an older backup, or run 'chainvolctl backup verify' on each"},
	{s3chain.ErrCorruptBlock, "a block object is damaged or missing; restore an older backup that does not use it"},
	{s3chain.ErrTargetTooSmall, "restore onto a file or device at least as large as the backup's size (see 'chainvolctl backup show')"},
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
