package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// metadataFlags are the flags of both snapshot-metadata commands.
type metadataFlags struct {
	start      int64
	maxResults int32
	apply      bool
	s          secretFlags
}

func (a *app) newCSIMetadataCmd(f *csiFlags) *cobra.Command {
	return parentCmd(&cobra.Command{
		Use:   "snapshot-metadata",
		Short: "Which ranges of a snapshot hold data, or changed between two (SnapshotMetadata service)",
		Long: `Calls the driver's SnapshotMetadata service (CSI spec, KEP-3314's changed
block tracking): the ranges a snapshot holds data in (allocated) or the
ranges that changed between two snapshots of one volume or chain (delta),
from metadata only: FIEMAP extents for local snapshots (VARIABLE_LENGTH), the
manifests' block digests for backups (FIXED_LENGTH, the chain's block size).
An interrupted stream is resent from the end of the last range received,
as the spec allows. With --apply SRC DST the ranges are copied from SRC to
DST: SRC holds the (target) snapshot's bytes, e.g. the device of a block
volume created from it; DST is a copy of the base snapshot (delta) or a
zeroed file or device (allocated), made equal to SRC.`,
		Example: `  chainvolctl csi snapshot-metadata allocated SNAPSHOT_ID -o json
  chainvolctl csi snapshot-metadata delta BASE_ID TARGET_ID
  chainvolctl csi snapshot-metadata delta BASE_ID TARGET_ID --apply /dev/block-of-target copy-of-base.img`,
	}, a.newCSIMetadataAllocatedCmd(f), a.newCSIMetadataDeltaCmd(f))
}

func (m *metadataFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.Int64Var(&m.start, "starting-offset", 0, "first byte to report ranges from")
	fl.Int32Var(&m.maxResults, "max-results", 0, "ranges per streamed message (0: the driver's choice)")
	fl.BoolVar(&m.apply, "apply", false, "copy the ranges from SRC to DST (two more arguments)")
	m.s.add(fl)
}

// metaOpen starts one stream of a snapshot-metadata command from byte
// start, for the snapshot ids in argv.
type metaOpen func(ctx context.Context, c *csiClient, m *metadataFlags, argv []string, secrets map[string]string, start int64) (metaRecv, error)

// newCSIMetadataStreamCmd is one snapshot-metadata command: ids snapshot
// ids as arguments, then SRC DST with --apply.
func (a *app) newCSIMetadataStreamCmd(f *csiFlags, use, short, example string, ids int, open metaOpen) *cobra.Command {
	var m metadataFlags
	cmd := &cobra.Command{
		Use:     use,
		Short:   short,
		Example: example,
		Args:    args(cobra.RangeArgs(ids, ids+2)),
		RunE: a.run(func(cmd *cobra.Command, argv []string) error {
			return a.runMetadata(cmd, f, &m, argv, ids, func(ctx context.Context, c *csiClient, secrets map[string]string, start int64) (metaRecv, error) {
				return open(ctx, c, &m, argv, secrets, start)
			})
		}),
	}
	m.add(cmd)
	return cmd
}

func (a *app) newCSIMetadataAllocatedCmd(f *csiFlags) *cobra.Command {
	return a.newCSIMetadataStreamCmd(f, "allocated SNAPSHOT_ID [--apply SRC DST]",
		"The ranges of a snapshot that hold data (GetMetadataAllocated)",
		"  chainvolctl csi snapshot-metadata allocated backup:default:ns/data@20260101T000000Z -o json", 1,
		func(ctx context.Context, c *csiClient, m *metadataFlags, argv []string, secrets map[string]string, start int64) (metaRecv, error) {
			st, err := c.meta.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: argv[0], StartingOffset: start, MaxResults: m.maxResults, Secrets: secrets})
			return func() (metaMessage, error) { return st.Recv() }, err
		})
}

func (a *app) newCSIMetadataDeltaCmd(f *csiFlags) *cobra.Command {
	return a.newCSIMetadataStreamCmd(f, "delta BASE_ID TARGET_ID [--apply SRC DST]",
		"The ranges that changed from one snapshot to a later one (GetMetadataDelta)",
		"  chainvolctl csi snapshot-metadata delta SNAP_1 SNAP_2 --apply /dev/xvdb copy.img", 2,
		func(ctx context.Context, c *csiClient, m *metadataFlags, argv []string, secrets map[string]string, start int64) (metaRecv, error) {
			st, err := c.meta.GetMetadataDelta(ctx, &csi.GetMetadataDeltaRequest{BaseSnapshotId: argv[0], TargetSnapshotId: argv[1],
				StartingOffset: start, MaxResults: m.maxResults, Secrets: secrets})
			return func() (metaMessage, error) { return st.Recv() }, err
		})
}

// metaMessage is what both responses have.
type metaMessage interface {
	GetBlockMetadataType() csi.BlockMetadataType
	GetVolumeCapacityBytes() int64
	GetBlockMetadata() []*csi.BlockMetadata
}

// metaRecv reads the next message of a stream (io.EOF at its end).
type metaRecv func() (metaMessage, error)

// metaRange is one range in -o json: bytes [byteOffset, byteOffset+sizeBytes).
type metaRange struct {
	ByteOffset int64 `json:"byteOffset"`
	SizeBytes  int64 `json:"sizeBytes"`
}

// metaAnswer is a whole answer, as -o json prints it.
type metaAnswer struct {
	BlockMetadataType   string      `json:"blockMetadataType"`
	VolumeCapacityBytes int64       `json:"volumeCapacityBytes"`
	Ranges              []metaRange `json:"ranges"`
	// CoveredBytes is the sum of the ranges' sizes, clipped at the capacity.
	CoveredBytes int64 `json:"coveredBytes"`
	// AppliedBytes is what --apply copied.
	AppliedBytes int64 `json:"appliedBytes,omitempty"`
}

// runMetadata reads the whole answer of open (ids are argv[:nIDs]; with
// --apply, SRC and DST follow), applies it if asked, and prints it.
func (a *app) runMetadata(cmd *cobra.Command, f *csiFlags, m *metadataFlags, argv []string, nIDs int,
	open func(context.Context, *csiClient, map[string]string, int64) (metaRecv, error)) error {
	if m.apply != (len(argv) == nIDs+2) {
		return usagef("--apply takes SRC and DST after the snapshot ids, and SRC DST need --apply")
	}
	secrets, err := m.s.load()
	if err != nil {
		return err
	}
	return f.call(cmd.Context(), func(ctx context.Context, c *csiClient) error {
		ans, err := readMetadata(ctx, f, c, secrets, m.start, open)
		if err != nil {
			return err
		}
		if m.apply {
			if ans.AppliedBytes, err = applyRanges(argv[nIDs], argv[nIDs+1], ans); err != nil {
				return err
			}
		}
		return a.emit(cmd, ans, func(w io.Writer) error { return metadataTable(w, ans) })
	})
}

// readMetadata reads streams until one ends normally, resending the
// request from the end of the last range after an Unavailable or
// interrupted stream (at most 3 times; CSI spec "Special considerations
// for processing a snapshot metadata gRPC stream").
func readMetadata(ctx context.Context, f *csiFlags, c *csiClient, secrets map[string]string, start int64,
	open func(context.Context, *csiClient, map[string]string, int64) (metaRecv, error)) (metaAnswer, error) {
	var ans metaAnswer
	for tries := 0; ; tries++ {
		err := readStream(ctx, f, c, secrets, start, open, &ans)
		if err == nil {
			return ans, nil
		}
		if tries >= 3 || status.Code(err) != codes.Unavailable {
			return ans, err
		}
		if n := len(ans.Ranges); n > 0 {
			start = ans.Ranges[n-1].ByteOffset + ans.Ranges[n-1].SizeBytes
		}
	}
}

// readStream appends one stream's ranges to ans.
func readStream(ctx context.Context, f *csiFlags, c *csiClient, secrets map[string]string, start int64,
	open func(context.Context, *csiClient, map[string]string, int64) (metaRecv, error), ans *metaAnswer) error {
	ctx, cancel := f.withTimeout(ctx)
	defer cancel()
	recv, err := open(ctx, c, secrets, start)
	if err != nil {
		return err
	}
	for {
		msg, err := recv()
		if errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return err
		}
		ans.BlockMetadataType, ans.VolumeCapacityBytes = msg.GetBlockMetadataType().String(), msg.GetVolumeCapacityBytes()
		for _, b := range msg.GetBlockMetadata() {
			ans.Ranges = append(ans.Ranges, metaRange{b.GetByteOffset(), b.GetSizeBytes()})
			ans.CoveredBytes += max(0, min(b.GetByteOffset()+b.GetSizeBytes(), ans.VolumeCapacityBytes)-b.GetByteOffset())
		}
	}
}

// metadataTable prints one row a range and a summary line.
func metadataTable(w io.Writer, ans metaAnswer) error {
	t := newTable(w, "OFFSET", "SIZE", "END")
	for _, r := range ans.Ranges {
		t.row(fmt.Sprint(r.ByteOffset), fmt.Sprint(r.SizeBytes), fmt.Sprint(r.ByteOffset+r.SizeBytes))
	}
	if err := t.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d ranges (%s), %s of a %s volume%s\n", len(ans.Ranges), ans.BlockMetadataType,
		bytesStr(ans.CoveredBytes), bytesStr(ans.VolumeCapacityBytes), appliedStr(ans.AppliedBytes))
	return err
}

func appliedStr(n int64) string {
	if n == 0 {
		return ""
	}
	return ", " + bytesStr(n) + " applied"
}
