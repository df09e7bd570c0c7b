package s3chain_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain"
)

// BenchmarkBackupS3 takes full backups of the volume of benchS3Volume
// (512 MiB, half of it data) with the default block size and workers to
// versitygw on loopback, each into a new version-3 chain: the full backup
// of `make bench` without the driver, so that `-cpuprofile` and `-trace`
// show where its time goes (docs/BENCHMARKS.md). It reports MB/s of data
// and the client's CPU (user+sys of this process, not the S3 server's)
// per GiB of data.
func BenchmarkBackupS3(b *testing.B) {
	ctx := context.Background()
	r, _, vol := benchS3Volume(b)
	var total time.Duration
	var data int64
	cpu0 := processCPU()
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		m, _, err := r.Backup(ctx, s3chain.BackupOptions{Chain: fmt.Sprintf("bench/full-%d", i), Source: vol.path})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		data += m.AllocatedBytes
	}
	b.ReportMetric(float64(data)/(1<<20)/total.Seconds(), "MB/s")
	b.ReportMetric((processCPU()-cpu0).Seconds()/(float64(data)/(1<<30)), "cpu-s/GiB")
}
