package s3chain

import (
	"context"
	"errors"
)

var errTODO = errors.New("not implemented yet")

func (r *Repo) Restore(ctx context.Context, o RestoreOptions) (*Manifest, RestoreStats, error) {
	return nil, RestoreStats{}, errTODO
}
func (r *Repo) Verify(ctx context.Context, chain, backupID string, deep bool) error { return errTODO }
func (r *Repo) DeleteBackup(ctx context.Context, chain, backupID string) error      { return errTODO }
func (r *Repo) GC(ctx context.Context, o GCOptions) (GCStats, error)                { return GCStats{}, errTODO }
func DetectFSType(ctx context.Context, path string) (string, error)                 { return "", errTODO }
