package s3chain

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

func sampleManifest() *Manifest {
	h := strings.Repeat("ab", 32)
	m := &Manifest{FormatVersion: 1, Chain: "ns/vol", ID: "20261129T101500Z", ParentID: "20261128T101500Z",
		ParentDigest: strings.Repeat("01", 32), CreatedAt: time.Date(2026, 11, 29, 10, 15, 0, 5, time.UTC),
		SizeBytes: 10<<20 + 5, BlockSize: 1 << 20, VolumeMode: "Block", FSType: "",
		Blocks:     []BlockRef{{Index: 0, Digest: h}, {Index: 3}, {Index: 10, Digest: h}},
		DataBlocks: 2, ZeroBlocks: 1, DataBytes: 1<<20 + 5, VolumeDigest: h, MAC: h}
	return m
}

func TestManifestRoundTrip(t *testing.T) {
	m := sampleManifest()
	got, err := DecodeManifest(m.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest() != m.Digest() || got.NumBlocks() != 11 || got.blockLen(10) != 5 {
		t.Errorf("decoded %+v", got)
	}
}

func TestDecodeManifestRejects(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(m *Manifest)
		want error
	}{
		"block outside":  {func(m *Manifest) { m.Blocks[2].Index = 11 }, ErrInvalidManifest},
		"unsorted":       {func(m *Manifest) { m.Blocks[1].Index = 0 }, ErrInvalidManifest},
		"counts":         {func(m *Manifest) { m.DataBytes++ }, ErrInvalidManifest},
		"zero in full":   {func(m *Manifest) { m.ParentID, m.ParentDigest = "", "" }, ErrInvalidManifest},
		"block size":     {func(m *Manifest) { m.BlockSize = 1000 }, ErrInvalidManifest},
		"bad chain":      {func(m *Manifest) { m.Chain = "a//b" }, ErrInvalidManifest},
		"digest":         {func(m *Manifest) { m.Blocks[0].Digest = "XY" }, ErrInvalidManifest},
		"parent no link": {func(m *Manifest) { m.ParentDigest = "" }, ErrInvalidManifest},
	} {
		m := sampleManifest()
		c.edit(m)
		if _, err := DecodeManifest(m.Encode()); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	v4 := strings.Replace(string(sampleManifest().Encode()), `"formatVersion":1`, `"formatVersion":4`, 1)
	if _, err := DecodeManifest([]byte(v4)); !errors.Is(err, ErrFormatVersion) {
		t.Errorf("version 4: %v", err)
	}
	data := sampleManifest().Encode()
	if _, err := DecodeManifest(append([]byte(" "), data...)); !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("non-canonical: %v", err)
	}
	extra := strings.Replace(string(data), `"mac"`, `"x":1,"mac"`, 1)
	if _, err := DecodeManifest([]byte(extra)); !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("unknown field: %v", err)
	}
}

// FuzzDecodeManifest: the decoder never panics, and whatever it accepts is
// valid and re-encodes to the same bytes.
func FuzzDecodeManifest(f *testing.F) {
	f.Add(sampleManifest().Encode())
	full := sampleManifest()
	full.ParentID, full.ParentDigest, full.Blocks, full.DataBlocks, full.ZeroBlocks, full.DataBytes = "", "", nil, 0, 0, 0
	f.Add(full.Encode())
	f.Add(sampleManifestV2().Encode())
	f.Add([]byte(`{"formatVersion":1}`))
	f.Add([]byte(`{"formatVersion":2,"blocks":"AAAA"}`))
	f.Add([]byte(`{"formatVersion":1,"blocks":[{"i":-1}]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifest(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidManifest) && !errors.Is(err, ErrFormatVersion) {
				t.Fatalf("error without sentinel: %v", err)
			}
			return
		}
		if string(m.Encode()) != string(data) {
			t.Fatalf("accepted a manifest that does not re-encode or validate")
		}
		if m.NumBlocks() > 1<<16 {
			return // valid, but too big to map on every fuzz input
		}
		if _, err := blockMap([]*Manifest{m}); err != nil {
			t.Fatalf("accepted manifest has a bad block list: %v", err)
		}
	})
}

func TestChainNames(t *testing.T) {
	for _, ok := range []string{"ns/name", "pvc-0123", "a.b_c-d/e", strings.Repeat("a", 100)} {
		if err := ValidChainName(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
		enc := encodeChain(ok)
		if strings.ContainsAny(enc, "/.") || store.ValidateKey(configKey(ok)) != nil {
			t.Errorf("%q encodes to %q", ok, enc)
		}
		if back, err := decodeChain(enc); err != nil || back != ok {
			t.Errorf("%q: decoded %q, %v", ok, back, err)
		}
	}
	for _, bad := range []string{"", "/a", "a/", "a//b", "a/../b", ".", "a b", "ü", strings.Repeat("a", 101)} {
		if err := ValidChainName(bad); !errors.Is(err, ErrInvalidChain) {
			t.Errorf("%q accepted: %v", bad, err)
		}
	}
	for _, bad := range []string{"_2", "a_zz", "a_2fb_2f"} { // truncated, not hex, trailing '/'
		if _, err := decodeChain(bad); err == nil {
			t.Errorf("decodeChain(%q) accepted", bad)
		}
	}
	if encodeChain("a_b") == encodeChain("a/b") {
		t.Error("'_' and '/' collide")
	}
	for _, bad := range []string{"", "latest", "-x", "a/b", strings.Repeat("a", 65)} {
		if ValidBackupID(bad) == nil {
			t.Errorf("backup id %q accepted", bad)
		}
	}
}
