package s3chain

import (
	"crypto/rand"
	"errors"
)

// seal encrypts plain with the repository key: nonce (12 bytes) || AES-GCM
// ciphertext and tag. aad binds the result to its object (a block digest,
// a chain name) so objects cannot be swapped unnoticed. The nonce is random:
// 2^-32 collision risk after 2^32 seals with one key (NIST SP 800-38D §8.3).
func (r *Repo) seal(plain, aad []byte) []byte {
	ns := r.aead.NonceSize()
	out := make([]byte, ns, ns+len(plain)+r.aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		panic(err) // crypto/rand never fails on Linux (getrandom)
	}
	return r.aead.Seal(out, out[:ns], plain, aad)
}

// open reverses seal in place (the result overwrites sealed); it fails if
// the key or aad differ or a byte was changed.
func (r *Repo) open(sealed, aad []byte) ([]byte, error) {
	ns := r.aead.NonceSize()
	if len(sealed) < ns+r.aead.Overhead() {
		return nil, errors.New("sealed object too short")
	}
	return r.aead.Open(sealed[ns:ns], sealed[:ns], sealed[ns:], aad)
}
