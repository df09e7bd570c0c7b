package s3chain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// manifestMAC returns HMAC-SHA256 (RFC 2104) of the manifest encoded with
// MAC "", keyed by the chain's digest key, in lower-case hex.
func manifestMAC(key []byte, m *Manifest) string {
	c := *m
	c.MAC = ""
	h := hmac.New(sha256.New, key)
	h.Write(c.Encode())
	return hex.EncodeToString(h.Sum(nil))
}

// sign sets m.MAC with the chain's digest key.
func (cfg *chainConfig) sign(m *Manifest) { m.MAC = manifestMAC(cfg.key, m) }

// checkMAC fails with ErrInvalidManifest if m was not signed with the
// chain's digest key: the object was corrupted or forged.
func (cfg *chainConfig) checkMAC(m *Manifest) error {
	if !hmac.Equal([]byte(manifestMAC(cfg.key, m)), []byte(m.MAC)) {
		return fmt.Errorf("%w: manifest of backup %q in chain %q fails its MAC (corrupt or forged)", ErrInvalidManifest, m.ID, m.Chain)
	}
	return nil
}
