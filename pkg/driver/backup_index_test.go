package driver

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"

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
