package s3chain

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain/storetest"
)

// openConfig reads versions 1 and 2 with HMAC-SHA256 and version 3 with
// BLAKE3 block names, and refuses any other pairing or version with
// ErrFormatVersion: a chain's digest is fixed by its version.
func TestOpenConfigVersionAndDigest(t *testing.T) {
	r, err := NewRepo(storetest.NewMem(), RepoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secret := make([]byte, digestKeyLen)
	for _, c := range []struct {
		version int
		digest  string
		ok      bool
	}{
		{1, digestHMAC, true}, {2, digestHMAC, true}, {3, digestBLAKE3, true},
		{3, digestHMAC, false}, {2, digestBLAKE3, false}, {1, digestBLAKE3, false},
		{3, "sha3-256", false}, {3, "", false}, {4, digestBLAKE3, false}, {0, digestHMAC, false},
	} {
		name := fmt.Sprintf("v%d-%s", c.version, c.digest)
		cfg := chainConfig{FormatVersion: c.version, Chain: "ns/vol", BlockSize: DefaultBlockSize,
			Digest: c.digest, Compression: "zstd", Encryption: encNone, DigestKey: secret, Secret: secret}
		data, _ := json.Marshal(cfg)
		got, err := r.openConfig("ns/vol", data)
		if !c.ok {
			if !errors.Is(err, ErrFormatVersion) {
				t.Errorf("%s: %v, want ErrFormatVersion", name, err)
			}
			continue
		}
		if err != nil || got.keys.names.algo != c.digest {
			t.Errorf("%s: %v, names %q", name, err, got.keys.names.algo)
		}
	}
}

// The block-name keys of version 2 and 3 chains differ (their own HKDF
// labels), so no key serves two algorithms.
func TestNamesKeyPerVersion(t *testing.T) {
	secret := make([]byte, digestKeyLen)
	v2, err2 := keysV2(secret, digestHMAC, false)
	v3, err3 := keysV2(secret, digestBLAKE3, false)
	if err2 != nil || err3 != nil || string(v2.names.key) == string(v3.names.key) ||
		string(v3.names.key) != string(deriveKey(secret, labelBlockNamesV3)) || string(v2.macV2) != string(v3.macV2) {
		t.Fatalf("v2 %x, v3 %x", v2.names.key, v3.names.key)
	}
}
