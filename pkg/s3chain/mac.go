package s3chain

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// manifestMAC returns HMAC-SHA256 (RFC 2104) of the manifest encoded with
// MAC "", in lower-case hex.
func manifestMAC(key []byte, m *Manifest) string {
	c := *m
	c.MAC = ""
	h := hmac.New(sha256.New, key)
	h.Write(c.Encode())
	return hex.EncodeToString(h.Sum(nil))
}

// macKey is the key of m's MAC: version-2 and -3 manifests use the derived
// MAC key M (never the block-name key), version-1 ones the old shared key.
func (cfg *chainConfig) macKey(m *Manifest) []byte {
	if m.FormatVersion == 1 {
		return cfg.keys.macV1
	}
	return cfg.keys.macV2
}

// sign sets m.MAC. Manifests keep HMAC-SHA256 in version-3 chains too
// (FORMAT.md §4.1): a manifest holds 36 bytes per block, 1/58000 of a
// 2 MiB block's bytes, and is MAC'd once per backup or read, so BLAKE3
// would save nothing measurable, and one MAC serves chains of every
// version.
func (cfg *chainConfig) sign(m *Manifest) { m.MAC = manifestMAC(cfg.macKey(m), m) }

// checkMAC fails with ErrInvalidManifest if m was not signed with the
// chain's key: the object was corrupted or forged. A version-1 manifest in
// a version-2 or -3 chain is refused: nothing written by them is version 1,
// and that MAC key would be the block-name key (FORMAT.md §3.1).
func (cfg *chainConfig) checkMAC(m *Manifest) error { return cfg.checkStoredMAC(m, nil) }

// checkStoredMAC is checkMAC of m as decoded from data, its canonical
// encoding (DecodeManifest checked that; nil: not known). A version-2 or
// -3 encoding ends with the MAC, so the MAC's input, the encoding with MAC
// "", is data without those 64 hex digits, and m need not be encoded
// again (at 1 Mi blocks that was 100 MiB of allocations,
// BenchmarkScale/manifest).
func (cfg *chainConfig) checkStoredMAC(m *Manifest, data []byte) error {
	if m.FormatVersion == 1 && cfg.FormatVersion != 1 {
		return fmt.Errorf("%w: manifest of backup %q in chain %q is version 1 in a version-%d chain (forged)", ErrInvalidManifest, m.ID, m.Chain, cfg.FormatVersion)
	}
	var want string
	if m.FormatVersion != 1 && bytes.HasSuffix(data, []byte(`"mac":"`+m.MAC+`"}`)) {
		h := hmac.New(sha256.New, cfg.macKey(m))
		h.Write(data[:len(data)-len(m.MAC)-2])
		h.Write([]byte(`"}`))
		want = hex.EncodeToString(h.Sum(nil))
	} else {
		want = manifestMAC(cfg.macKey(m), m)
	}
	if !hmac.Equal([]byte(want), []byte(m.MAC)) {
		return fmt.Errorf("%w: manifest of backup %q in chain %q fails its MAC (corrupt or forged)", ErrInvalidManifest, m.ID, m.Chain)
	}
	return nil
}
