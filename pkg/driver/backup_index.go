package driver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/klog/v2"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
	"github.com/chainvol/chainvol/pkg/volume"
)

// indexTTL is the staleness rule of ListSnapshots: the backups of a target
// are listed as they were at most this long ago, except for this driver's
// own uploads and deletions, which drop the target's entries at once.
// Backups other nodes or clusters make appear within indexTTL.
const indexTTL = 30 * time.Second

// backupIndex caches each target's backups, as CSI snapshots, per set of
// credentials (what one key can read another may not), so that a
// ListSnapshots does not read every manifest of every chain each time.
type backupIndex struct {
	mu      sync.Mutex
	entries map[indexKey]indexEntry
	// gen counts each target's invalidations, so a listing that was read
	// while one happened is not cached.
	gen map[string]uint64
}

type indexKey struct{ target, creds string }

type indexEntry struct {
	at    time.Time
	snaps []*csi.Snapshot
}

// get returns the cached listing of key if it is fresh, and the target's
// generation for a later put.
func (x *backupIndex) get(k indexKey) ([]*csi.Snapshot, uint64, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	e, ok := x.entries[k]
	return e.snaps, x.gen[k.target], ok && time.Since(e.at) < indexTTL
}

// put caches a listing read since at, unless the target was invalidated
// after generation gen.
func (x *backupIndex) put(k indexKey, snaps []*csi.Snapshot, at time.Time, gen uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.gen[k.target] != gen {
		return
	}
	if x.entries == nil {
		x.entries = map[indexKey]indexEntry{}
	}
	x.entries[k] = indexEntry{at: at, snaps: snaps}
}

// invalidate drops every cached listing of target name.
func (x *backupIndex) invalidate(name string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.gen == nil {
		x.gen = map[string]uint64{}
	}
	x.gen[name]++
	for k := range x.entries {
		if k.target == name {
			delete(x.entries, k)
		}
	}
}

// credsDigest identifies a request's secrets in the index without keeping
// them: SHA-256 over the known keys, each value quoted, so that no two sets
// of secrets hash the same bytes (a value holding a NUL and a key name
// could otherwise shift into the next key's) and share another's listing.
func credsDigest(secrets map[string]string) string {
	h := sha256.New()
	for _, k := range []string{target.KeyAccessKeyID, target.KeySecretAccessKey, target.KeySessionToken, target.KeyEncryptionKey} {
		fmt.Fprintf(h, "%s=%q\n", k, secrets[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// targetBackups lists every backup of target name that its credentials
// (the request's, else the file's) can read, made by any node or cluster,
// from the index when fresh. A chain that cannot be read is logged and
// skipped: it never hides the others. Errors: opening the target or
// listing its chains.
func (d *snapshotter) targetBackups(ctx context.Context, name string, secrets map[string]string) ([]*csi.Snapshot, error) {
	k := indexKey{target: name, creds: credsDigest(secrets)}
	snaps, gen, ok := d.index.get(k)
	if ok {
		return snaps, nil
	}
	start := time.Now()
	repo, err := d.targets.Open(ctx, name, secrets)
	if err != nil {
		return nil, err
	}
	out, complete, err := listBackups(ctx, repo, name)
	if err != nil {
		return nil, err
	}
	if complete {
		d.index.put(k, out, start, gen)
	}
	return out, nil
}

// chainLister is what a listing reads of a target (s3chain.Repo).
type chainLister interface {
	Chains(ctx context.Context) ([]string, error)
	BackupHeaders(ctx context.Context, chain string) ([]*s3chain.Manifest, error)
}

// listBackups lists every backup of target name as CSI snapshots, and
// whether it is complete: a chain that cannot be read is logged and
// skipped, so that it never hides the others, and when the target could
// not answer for it (volume.Unreachable) the listing is not one to cache
// (the index would hide the chain's backups for indexTTL).
// A done ctx fails the listing rather than skipping every chain left (a
// listing cut short by the caller's deadline was answered, and cached, as
// if those chains had no backups). Errors: listing the chains, ctx's.
func listBackups(ctx context.Context, repo chainLister, name string) ([]*csi.Snapshot, bool, error) {
	chains, err := repo.Chains(ctx)
	if err != nil {
		return nil, false, err
	}
	var out []*csi.Snapshot
	complete := true
	for _, c := range chains {
		ms, err := repo.BackupHeaders(ctx, c) // metadata only: no chain's block lists all in memory
		if ctx.Err() != nil {
			return nil, false, context.Cause(ctx)
		}
		if err != nil {
			klog.InfoS("cannot list the backups of a chain; skipped", "target", name, "chain", c, "err", err)
			// A chain these credentials cannot read (another cluster's
			// key) is skipped the same way next time: only a target
			// that could not answer keeps the listing out of the index.
			complete = complete && !volume.Unreachable(err)
			continue
		}
		for _, m := range ms {
			out = append(out, manifestSnapshot(volume.BackupID(target.Ref{Target: name, Chain: c, Backup: m.ID}), m))
		}
	}
	return out, complete, nil
}

// manifestSnapshot describes an uploaded backup as a CSI snapshot.
func manifestSnapshot(id string, m *s3chain.Manifest) *csi.Snapshot {
	return &csi.Snapshot{SnapshotId: id, SourceVolumeId: m.SourceVolume, SizeBytes: m.SizeBytes,
		CreationTime: timestamppb.New(m.CreatedAt), ReadyToUse: true}
}
