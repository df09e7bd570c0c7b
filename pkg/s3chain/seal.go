package s3chain

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
)

// newAEAD returns AES-256-GCM under key (32 bytes).
func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// seal encrypts plain: nonce (12 bytes) || AES-GCM ciphertext and tag. aad
// binds the result to its object (a block digest, a chain name) so objects
// cannot be swapped unnoticed. The nonce is random: 2^-32 collision risk
// after 2^32 seals with one key (NIST SP 800-38D §8.3), which is why format
// version 2 gives every chain its own block key.
func seal(aead cipher.AEAD, plain, aad []byte) []byte {
	ns := aead.NonceSize()
	out := make([]byte, ns, ns+len(plain)+aead.Overhead())
	if _, err := rand.Read(out); err != nil {
		panic(err) // crypto/rand never fails on Linux (getrandom)
	}
	return aead.Seal(out, out[:ns], plain, aad)
}

// open reverses seal in place (the result overwrites sealed); it fails if
// the key or aad differ or a byte was changed.
func open(aead cipher.AEAD, sealed, aad []byte) ([]byte, error) {
	ns := aead.NonceSize()
	if len(sealed) < ns+aead.Overhead() {
		return nil, errors.New("sealed object too short")
	}
	return aead.Open(sealed[ns:ns], sealed[:ns], sealed[ns:], aad)
}
