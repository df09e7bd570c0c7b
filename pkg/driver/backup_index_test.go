package driver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/chainvol/chainvol/pkg/s3chain"
	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

// TestBackupIndex: a listing is served for indexTTL, dropped at once by an
// invalidation of its target (this driver's own upload or delete), and a
// listing read across an invalidation is not cached; entries are per
// target and per credentials.
func TestBackupIndex(t *testing.T) {
	var x backupIndex
	k := indexKey{target: "offsite", creds: credsDigest(map[string]string{"accessKeyID": "a"})}
	other := indexKey{target: "offsite", creds: credsDigest(map[string]string{"accessKeyID": "b"})}
	one := []*csi.Snapshot{{SnapshotId: "backup:offsite:c@1"}}

	_, gen, ok := x.get(k)
	if ok {
		t.Fatal("empty index served a listing")
	}
	x.put(k, one, time.Now(), gen)
	if got, _, ok := x.get(k); !ok || len(got) != 1 {
		t.Fatalf("fresh listing not served: %v %v", got, ok)
	}
	if _, _, ok := x.get(other); ok {
		t.Fatal("a listing made with other credentials was served")
	}
	x.put(k, one, time.Now().Add(-indexTTL), gen)
	if _, _, ok := x.get(k); ok {
		t.Fatalf("a listing older than %v was served", indexTTL)
	}

	x.put(k, one, time.Now(), gen)
	x.invalidate("offsite")
	if _, _, ok := x.get(k); ok {
		t.Fatal("listing served after its target was invalidated")
	}
	x.put(k, one, time.Now(), gen) // read before the invalidation
	if _, _, ok := x.get(k); ok {
		t.Fatal("a listing read across an invalidation was cached")
	}
	if credsDigest(nil) == credsDigest(map[string]string{"encryptionKey": "k"}) {
		t.Fatal("an encryption key does not change the credentials digest")
	}
}

// TestCredsDigestInjective: secrets that differ only in where a NUL, '='
// or a key's name falls, and random ones over those bytes, never share a
// digest (the index would answer one set of credentials with another's
// listing).
func TestCredsDigestInjective(t *testing.T) {
	a, s := target.KeyAccessKeyID, target.KeySecretAccessKey
	sets := []map[string]string{
		{a: "a\x00" + s + "=b", s: ""}, {a: "a", s: "b\x00" + s + "="}, {a: "a"}, {a: "a", s: ""}, {},
	}
	r := rand.New(rand.NewPCG(24, 9))
	const bytes = "a=\x00\n\"\\"
	for range 20000 {
		m := map[string]string{}
		for _, k := range []string{a, s, target.KeySessionToken, target.KeyEncryptionKey} {
			if r.IntN(2) == 0 {
				b := make([]byte, r.IntN(6))
				for i := range b {
					b[i] = bytes[r.IntN(len(bytes))]
				}
				m[k] = string(b)
			}
		}
		sets = append(sets, m)
	}
	seen := map[string]string{}
	for _, m := range sets {
		// A missing key reads as "", like the request's secrets do.
		in := fmt.Sprintf("%q|%q|%q|%q", m[a], m[s], m[target.KeySessionToken], m[target.KeyEncryptionKey])
		d := credsDigest(m)
		if o, ok := seen[d]; ok && o != in {
			t.Fatalf("secrets %s and %s share a digest", o, in)
		}
		seen[d] = in
	}
}

// fakeLister lists chains whose BackupHeaders fail for those in bad and
// cancel ctx when cancelAt is read (fault injection for listBackups).
type fakeLister struct {
	chains   []string
	bad      map[string]bool // unreachable
	denied   map[string]bool // not readable with these credentials
	cancelAt string
	cancel   context.CancelFunc
}

func (f *fakeLister) Chains(context.Context) ([]string, error) { return f.chains, nil }

func (f *fakeLister) BackupHeaders(ctx context.Context, chain string) ([]*s3chain.Manifest, error) {
	if chain == f.cancelAt {
		f.cancel()
		return nil, ctx.Err()
	}
	if f.bad[chain] {
		return nil, fmt.Errorf("read config of chain %q: %w", chain, store.ErrTransient)
	}
	if f.denied[chain] {
		return nil, s3chain.ErrWrongKey
	}
	return []*s3chain.Manifest{{Chain: chain, ID: "20261204T000000Z-00000001"}}, nil
}

// TestListBackupsPartial (session 10's lifecycle interleavings): a
// listing cut short by the caller's context is an error, not a listing
// without the chains left (which the index then served for indexTTL: a
// ready backup missing from ListSnapshots); a chain that cannot be read
// because the target could not answer is skipped but the listing is
// marked incomplete, so it is not cached; one of another key is skipped
// and the listing cached.
func TestListBackupsPartial(t *testing.T) {
	f := &fakeLister{chains: []string{"a", "b", "c"}, bad: map[string]bool{"b": true}}
	got, complete, err := listBackups(context.Background(), f, "offsite")
	if err != nil || complete || len(got) != 2 {
		t.Fatalf("one bad chain: %d snapshots, complete %v, %v; want 2, false, nil", len(got), complete, err)
	}
	f.bad = nil
	if got, complete, err = listBackups(context.Background(), f, "offsite"); err != nil || !complete || len(got) != 3 {
		t.Fatalf("all readable: %d snapshots, complete %v, %v; want 3, true, nil", len(got), complete, err)
	}
	f.denied = map[string]bool{"c": true} // skipped again next time: cacheable
	if got, complete, err = listBackups(context.Background(), f, "offsite"); err != nil || !complete || len(got) != 2 {
		t.Fatalf("a chain of another key: %d snapshots, complete %v, %v; want 2, true, nil", len(got), complete, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	f.cancelAt, f.cancel = "b", cancel
	if got, _, err = listBackups(ctx, f, "offsite"); !errors.Is(err, context.Canceled) || got != nil {
		t.Fatalf("cancelled at chain b: %d snapshots, %v; want none, context.Canceled", len(got), err)
	}
}
