package s3chain

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func sampleManifestV2() *Manifest {
	h := strings.Repeat("ab", 32)
	return &Manifest{FormatVersion: 2, Chain: "ns/vol", ID: "20261129T101500Z", ParentID: "20261128T101500Z",
		CreatedAt: time.Date(2026, 11, 29, 10, 15, 0, 5, time.UTC), SizeBytes: 10<<20 + 5, BlockSize: 1 << 20,
		VolumeMode: "Block", Blocks: []BlockRef{{Index: 0, Digest: h}, {Index: 10, Digest: strings.Repeat("cd", 32)}},
		DataBlocks: 1, ZeroBlocks: 1, DataBytes: 5, AllocatedBytes: 1<<20 + 5, VolumeDigest: h, MAC: h}
}

func TestManifestV2RoundTrip(t *testing.T) {
	m := sampleManifestV2()
	data := m.Encode()
	if strings.Contains(string(data), "parentDigest") || !strings.Contains(string(data), `"formatVersion":2`) {
		t.Fatalf("v2 encoding: %s", data)
	}
	got, err := DecodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if got.Digest() != m.Digest() || len(got.Blocks) != 2 || got.Blocks[1] != m.Blocks[1] || !got.SelfContained() {
		t.Errorf("decoded %+v", got)
	}
}

func TestDecodeManifestV2Rejects(t *testing.T) {
	for name, c := range map[string]func(m *Manifest){
		"block outside":   func(m *Manifest) { m.Blocks[1].Index = 11 },
		"unsorted":        func(m *Manifest) { m.Blocks[1].Index = 0 },
		"zero digest":     func(m *Manifest) { m.Blocks[1].Digest = strings.Repeat("00", 32) },
		"allocated bytes": func(m *Manifest) { m.AllocatedBytes++ },
		"changed counts":  func(m *Manifest) { m.DataBlocks = 3 },
		"block size":      func(m *Manifest) { m.BlockSize = 1000 },
		"too many blocks": func(m *Manifest) { m.SizeBytes = (MaxBlocks + 1) << 20 },
	} {
		m := sampleManifestV2()
		c(m)
		if _, err := DecodeManifest(m.Encode()); !errors.Is(err, ErrInvalidManifest) {
			t.Errorf("%s: %v, want ErrInvalidManifest", name, err)
		}
	}
	data := string(sampleManifestV2().Encode())
	extra := strings.Replace(data, `"mac"`, `"x":1,"mac"`, 1)
	if _, err := DecodeManifest([]byte(extra)); !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("unknown field: %v", err)
	}
	short := strings.Replace(data, `"imageBlocks":2`, `"imageBlocks":3`, 1)
	if _, err := DecodeManifest([]byte(short)); !errors.Is(err, ErrInvalidManifest) {
		t.Errorf("entry count: %v", err)
	}
}

// Issue 12 case 7: a manifest beyond the bound fails fast with a named
// error instead of being decoded.
func TestDecodeManifestSizeBound(t *testing.T) {
	big := make([]byte, maxManifestBytes+1)
	start := time.Now()
	_, err := DecodeManifest(big)
	if !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("oversize manifest: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("refusing an oversize manifest took %v", d)
	}
	v1 := `{"formatVersion":1,"blocks":[` + strings.Repeat(`{"i":1},`, maxV1Bytes/8) + `{"i":1}]}`
	if _, err := DecodeManifest([]byte(v1)); !errors.Is(err, ErrInvalidManifest) || !strings.Contains(err.Error(), "version-1 manifest") {
		t.Fatalf("oversize v1 manifest: %v", err)
	}
}

// A new chain of a volume beyond MaxBlocks default blocks gets larger
// blocks instead of a refusal; a requested size always wins.
func TestNewChainBlockSize(t *testing.T) {
	for _, c := range []struct{ req, size, want int64 }{
		{0, 1 << 30, 0},
		{0, MaxBlocks * DefaultBlockSize, 0},
		{0, MaxBlocks*DefaultBlockSize + 1, 2 * DefaultBlockSize},
		{0, 5 << 40, 8 << 20},
		{1 << 20, 5 << 40, 1 << 20},
	} {
		if got := newChainBlockSize(c.req, c.size); got != c.want {
			t.Errorf("newChainBlockSize(%d, %d) = %d, want %d", c.req, c.size, got, c.want)
		}
	}
}

// A version-3 manifest has version 2's layout with formatVersion 3, and
// each version decodes to itself (so a v2 manifest keeps its bytes).
func TestManifestV3Layout(t *testing.T) {
	v2 := sampleManifestV2()
	v3 := sampleManifestV2()
	v3.FormatVersion = 3
	want := strings.Replace(string(v2.Encode()), `"formatVersion":2`, `"formatVersion":3`, 1)
	if string(v3.Encode()) != want {
		t.Fatalf("v3 encoding %s", v3.Encode())
	}
	for _, m := range []*Manifest{v2, v3} {
		got, err := DecodeManifest(m.Encode())
		if err != nil || got.FormatVersion != m.FormatVersion || got.Digest() != m.Digest() {
			t.Errorf("version %d: decoded %v, %v", m.FormatVersion, got, err)
		}
	}
}
