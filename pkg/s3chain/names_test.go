package s3chain

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// TestEncodeChainInjective: random valid chain names over the bytes the
// escape touches ('_', '/', '.', case, digits that look like escapes) get
// distinct key segments that decode back and make valid keys.
func TestEncodeChainInjective(t *testing.T) {
	const bytes = "aA-_/.2f5"
	r := rand.New(rand.NewPCG(24, 7))
	seen := map[string]string{}
	for range 30000 {
		b := make([]byte, 1+r.IntN(MaxChainNameLen))
		for i := range b {
			b[i] = bytes[r.IntN(len(bytes))]
		}
		name := string(b)
		if ValidChainName(name) != nil {
			continue
		}
		enc := encodeChain(name)
		if o, ok := seen[enc]; ok && o != name {
			t.Fatalf("chains %q and %q share the key segment %q", o, name, enc)
		}
		seen[enc] = name
		if back, err := decodeChain(enc); err != nil || back != name || strings.Contains(enc, "/") || store.ValidateKey(configKey(name)) != nil {
			t.Fatalf("%q encodes to %q, decodes to %q, %v", name, enc, back, err)
		}
	}
	if len(seen) < 5000 {
		t.Fatalf("only %d valid chains generated", len(seen))
	}
}
