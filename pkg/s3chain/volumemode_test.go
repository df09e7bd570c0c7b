package s3chain_test

import (
	"errors"
	"testing"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// TestNormalizeVolumeMode: any letter case of the two modes (older drivers
// wrote "block" and "filesystem") gives the spelling docs/FORMAT.md defines;
// anything else is an invalid manifest.
func TestNormalizeVolumeMode(t *testing.T) {
	for in, want := range map[string]string{
		"Block": s3chain.VolumeModeBlock, "block": s3chain.VolumeModeBlock, "BLOCK": s3chain.VolumeModeBlock,
		"Filesystem": s3chain.VolumeModeFilesystem, "filesystem": s3chain.VolumeModeFilesystem,
	} {
		if got, err := s3chain.NormalizeVolumeMode(in); err != nil || got != want {
			t.Errorf("NormalizeVolumeMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "mount", "raw", "Block "} {
		if _, err := s3chain.NormalizeVolumeMode(in); !errors.Is(err, s3chain.ErrInvalidManifest) {
			t.Errorf("NormalizeVolumeMode(%q) error = %v, want ErrInvalidManifest", in, err)
		}
	}
}
