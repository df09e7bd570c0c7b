package driver

import (
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
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
