package main

import (
	"fmt"
	"io"
	"os"
)

// applyRanges copies ans's ranges, clipped at the volume's capacity, from
// src (a file or block device holding the target snapshot's bytes) to dst
// (a copy of the base snapshot, opened without truncation), so that dst
// then holds src's bytes wherever the ranges say they may differ. A
// regular dst file is sized to the capacity first (a volume that grew
// between the snapshots). It returns the bytes copied; dst is synced.
// Errors: those of opening, reading (a short source), writing.
func applyRanges(src, dst string, ans metaAnswer) (int64, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY, 0)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	if st, err := out.Stat(); err == nil && st.Mode().IsRegular() && st.Size() != ans.VolumeCapacityBytes {
		if err := out.Truncate(ans.VolumeCapacityBytes); err != nil {
			return 0, err
		}
	}
	buf := make([]byte, 1<<20)
	var n int64
	for _, r := range ans.Ranges {
		end := min(r.ByteOffset+r.SizeBytes, ans.VolumeCapacityBytes)
		for off := r.ByteOffset; off < end; {
			chunk := buf[:min(int64(len(buf)), end-off)]
			if _, err := in.ReadAt(chunk, off); err != nil {
				if err == io.EOF {
					return n, fmt.Errorf("%s ends before byte %d of range %d+%d: is it the target snapshot's volume?", src, off+int64(len(chunk)), r.ByteOffset, r.SizeBytes)
				}
				return n, err
			}
			if _, err := out.WriteAt(chunk, off); err != nil {
				return n, err
			}
			off += int64(len(chunk))
			n += int64(len(chunk))
		}
	}
	return n, out.Sync()
}
