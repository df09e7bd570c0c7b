package s3chain

import (
	"crypto/rand"
	"errors"
	"strings"
	"testing"
)

// The block list is read in place and checked for canonical form without
// encoding it again (decodeV2): every other spelling of the same manifest
// must still be refused.
func TestDecodeManifestV2NonCanonicalList(t *testing.T) {
	data := string(sampleManifestV2().Encode())
	i := strings.Index(data, `"blocks":"`) + len(`"blocks":"`)
	list := data[i : i+2*b64Entry]
	for name, bad := range map[string]string{
		"line break in the list": data[:i+48] + "\n" + data[i+48:],
		"escaped slash":          strings.Replace(data, list, strings.Replace(list, "q", `\u0071`, 1), 1),
		"key in other case":      strings.Replace(data, `"blocks":`, `"Blocks":`, 1),
		"blocks twice":           strings.Replace(data, `"imageBlocks"`, `"blocks":"`+list+`","imageBlocks"`, 1),
		"padding":                strings.Replace(data, list+`"`, list+`AAAA="`, 1),
		"space before the list":  strings.Replace(data, `"blocks":"`, `"blocks": "`, 1),
		"list as null":           strings.Replace(data, `"`+list+`"`, `null`, 1),
	} {
		if bad == data {
			t.Fatalf("%s: the case changes nothing", name)
		}
		if _, err := DecodeManifest([]byte(bad)); !errors.Is(err, ErrInvalidManifest) {
			t.Errorf("%s: %v, want ErrInvalidManifest", name, err)
		}
	}
	if _, err := DecodeManifest([]byte(data)); err != nil {
		t.Fatalf("canonical: %v", err)
	}
}

// checkStoredMAC, which hashes the stored bytes, agrees with checkMAC,
// which encodes the manifest again, and a change of any byte is refused
// (a flipped byte of "formatVersion" reads as version 0: ErrFormatVersion).
func TestStoredMACMatchesEncodedMAC(t *testing.T) {
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	keys, err := keysV2(secret, digestBLAKE3, false)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &chainConfig{FormatVersion: 3, keys: keys}
	m := sampleManifestV2()
	m.FormatVersion = 3
	cfg.sign(m)
	data := m.Encode()
	if err := cfg.checkStoredMAC(m, data); err != nil {
		t.Fatalf("stored MAC: %v", err)
	}
	if err := cfg.checkMAC(m); err != nil {
		t.Fatalf("MAC: %v", err)
	}
	for k := range data {
		bad := []byte(string(data))
		bad[k] ^= 1
		got, err := DecodeManifest(bad)
		if err == nil {
			err = cfg.checkStoredMAC(got, bad)
		}
		if !errors.Is(err, ErrInvalidManifest) && !errors.Is(err, ErrFormatVersion) {
			t.Fatalf("byte %d flipped: %v, want ErrInvalidManifest", k, err)
		}
	}
}

// An imageBlocks whose product with an entry's base64 length wraps around
// to the list's length (2^60+1 entries of 48 bytes: 3*2^64 + 48) must be
// refused as ErrInvalidManifest, not size an allocation: the manifest is
// decoded before its MAC is checked, so anyone who can write to the bucket
// could otherwise crash every reader (makeslice: cap out of range).
func TestDecodeManifestV2ImageBlocksOverflow(t *testing.T) {
	m := sampleManifestV2()
	m.Blocks = m.Blocks[:1]
	m.AllocatedBytes = m.blockLen(m.Blocks[0].Index)
	m.DataBlocks, m.DataBytes = 1, m.AllocatedBytes
	data := string(m.Encode())
	if _, err := DecodeManifest([]byte(data)); err != nil {
		t.Fatalf("one block: %v", err)
	}
	bad := strings.Replace(data, `"imageBlocks":1,`, `"imageBlocks":1152921504606846977,`, 1)
	if bad == data {
		t.Fatal("the case changes nothing")
	}
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("DecodeManifest panicked: %v", p)
		}
	}()
	if _, err := DecodeManifest([]byte(bad)); !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("imageBlocks 2^60+1: %v, want ErrInvalidManifest", err)
	}
}
