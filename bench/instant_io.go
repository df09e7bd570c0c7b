package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/minio/minio-go/v7"
	"golang.org/x/sys/unix"
)

// klogTime is the timestamp of a klog line (header "I1203 10:32:15.123456");
// the year is not in it, so only differences of two lines are meaningful.
var klogTime = regexp.MustCompile(`(?m)^[IWE](\d{4} \d{2}:\d{2}:\d{2}\.\d{6})`)

// logSpan is the time between the driver's first log line holding both
// from and vol and its first later line holding both to and vol: the
// driver's own view of a job's duration.
func (d *driverProc) logSpan(vol, from, to string) (time.Duration, bool) {
	b, err := os.ReadFile(d.log)
	if err != nil {
		return 0, false
	}
	return logSpanIn(string(b), vol, from, to)
}

// logSpanIn is logSpan over the text of a log.
func logSpanIn(log, vol, from, to string) (time.Duration, bool) {
	var start time.Time
	for _, line := range strings.Split(log, "\n") {
		m := klogTime.FindStringSubmatch(line)
		if m == nil || !strings.Contains(line, vol) {
			continue
		}
		t, err := time.Parse("0102 15:04:05.000000", m[1])
		switch {
		case err != nil:
		case start.IsZero() && strings.Contains(line, from):
			start = t
		case !start.IsZero() && strings.Contains(line, to):
			return t.Sub(start), true
		}
	}
	return 0, false
}

var fetchRE = regexp.MustCompile(`(?m)^chainvol_hydration_fetch_seconds_(sum|count)\{[^}]*\} ([0-9.e+-]+)$`)

// fetchStats are the driver's block fetches of instant restores so far
// (chainvol_hydration_fetch_seconds: on-demand and hydration alike, every
// result): their count and summed latency.
func (d *driverProc) fetchStats() (n int64, total time.Duration, err error) {
	resp, err := http.Get(d.metrics)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, err
	}
	n, total = parseFetchStats(string(b))
	return n, total, nil
}

// parseFetchStats sums the count and the seconds of every result of
// chainvol_hydration_fetch_seconds in a Prometheus text exposition.
func parseFetchStats(text string) (n int64, total time.Duration) {
	for _, m := range fetchRE.FindAllStringSubmatch(text, -1) {
		v, _ := strconv.ParseFloat(m[2], 64)
		if m[1] == "count" {
			n += int64(v)
		} else {
			total += time.Duration(v * float64(time.Second))
		}
	}
	return n, total
}

// loopCounts are the bytes each loop device has read and written since
// it was created (/sys/block/loopN/stat fields 3 and 7, in 512-byte
// sectors whatever the device's sector size), by device name; they are
// not reset when a device is detached and attached again, so a device's
// I/O is a difference of two of these.
type loopCounts map[string][2]int64

func loopStats() loopCounts {
	out := loopCounts{}
	stats, _ := filepath.Glob("/sys/block/loop*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if f := strings.Fields(string(b)); err == nil && len(f) >= 7 {
			r, _ := strconv.ParseInt(f[2], 10, 64)
			w, _ := strconv.ParseInt(f[6], 10, 64)
			out[filepath.Base(filepath.Dir(p))] = [2]int64{r * 512, w * 512}
		}
	}
	return out
}

// loopIO is the bytes read and written, since before, by the loop device
// whose backing file is file; ok is false when no loop device backs it.
func loopIO(file string, before loopCounts) (read, written int64, ok bool) {
	matches, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil || strings.TrimSpace(string(b)) != file {
			continue
		}
		dev := filepath.Base(filepath.Dir(filepath.Dir(m)))
		now := loopStats()[dev]
		return now[0] - before[dev][0], now[1] - before[dev][1], true
	}
	return 0, 0, false
}

// dropCache drops the clean page cache of path (POSIX_FADV_DONTNEED), so
// that reads through it go to its file system again.
func dropCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}

// readDirect drops the page cache of the FUSE file fuse, then times one
// O_DIRECT read of the whole of path (at most 1 MiB): the file's bytes
// through ext4, the loop device and the FUSE server, none from a cache.
func readDirect(path, fuse string) (time.Duration, error) {
	if err := dropCache(fuse); err != nil {
		return 0, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := alignedBuf(1 << 20)
	t := time.Now()
	if _, err := io.ReadFull(f, buf); err != nil && err != io.ErrUnexpectedEOF {
		return 0, fmt.Errorf("read %s: %w", path, err)
	}
	return time.Since(t), nil
}

// hydrationPoll is how often waitHydrated asks: the hydration time is
// known to within it.
const hydrationPoll = 50 * time.Millisecond

// waitHydrated polls ControllerGetVolumeHealth until volume id has no
// "Hydrating" entry (the driver's hydrationHealth: present from
// CreateVolume until the lvol is recorded ready). A "HydrationFailed"
// entry is an error; a closed stop ends the wait with nil.
func (d *driverProc) waitHydrated(id string, stop <-chan struct{}) error {
	for {
		h, err := d.health(id)
		if err != nil {
			return err
		}
		hydrating := false
		for _, e := range h.GetHealthStatuses() {
			switch e.GetReason() {
			case "HydrationFailed":
				return fmt.Errorf("volume %s: %s", id, e.GetMessage())
			case "Hydrating":
				hydrating = true
			}
		}
		if !hydrating {
			return nil
		}
		select {
		case <-stop:
			return nil
		case <-time.After(hydrationPoll):
		}
	}
}

func (d *driverProc) health(id string) (*csi.VolumeHealth, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := d.ctrl.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: id})
	if err != nil {
		return nil, fmt.Errorf("ControllerGetVolumeHealth %s: %w", id, err)
	}
	return resp.GetVolumeHealth(), nil
}

var hydratedRE = regexp.MustCompile(`(\d+) of (\d+) bytes hydrated`)

// hydrationProgress reads the hydrated and total bytes from the message of
// volume id's "Hydrating" health entry; ok is false when there is none
// (hydration ended, or not started).
func (d *driverProc) hydrationProgress(id string) (done, total int64, ok bool) {
	h, err := d.health(id)
	if err != nil {
		return 0, 0, false
	}
	for _, e := range h.GetHealthStatuses() {
		if m := hydratedRE.FindStringSubmatch(e.GetMessage()); e.GetReason() == "Hydrating" && m != nil {
			done, _ = strconv.ParseInt(m[1], 10, 64)
			total, _ = strconv.ParseInt(m[2], 10, 64)
			return done, total, true
		}
	}
	return 0, 0, false
}

// randomReads reads 4 KiB at random 4 KiB-aligned offsets of path with
// O_DIRECT, one at a time (a database's point lookups), for dur or until
// until delivers (nil: end; an error: returned), and returns each read's
// latency.
func randomReads(path string, dur time.Duration, until <-chan error) ([]time.Duration, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_DIRECT, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pages := st.Size() / 4096
	if pages == 0 {
		return nil, fmt.Errorf("%s: empty", path)
	}
	buf := alignedBuf(4096)
	rng := rand.New(rand.NewPCG(uint64(st.Size()), 27))
	var lat []time.Duration
	for end := time.Now().Add(dur); time.Now().Before(end); {
		select {
		case err := <-until:
			return lat, err
		default:
		}
		off := rng.Int64N(pages) * 4096
		t := time.Now()
		if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
			return lat, fmt.Errorf("read %s at %d: %w", path, off, err)
		}
		lat = append(lat, time.Since(t))
	}
	return lat, nil
}

// slower counts the durations above d.
func slower(ds []time.Duration, d time.Duration) int {
	n := 0
	for _, x := range ds {
		if x > d {
			n++
		}
	}
	return n
}

// percentile is the q-quantile (nearest rank) of ds in seconds; 0 when empty.
func percentile(ds []time.Duration, q float64) Figure {
	f := Figure{Unit: "s"}
	if len(ds) == 0 {
		return f
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(int(q*float64(len(s))+0.5), len(s)) - 1
	f.Value = s[max(i, 0)].Seconds()
	return f
}

func sum(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t
}

// getOne times single GETs of three of img's block objects (picked by
// run, so runs fetch other objects), one after the other: what an
// on-demand fetch of one block costs on the wire, body read whole.
func (s *s3) getOne(ctx context.Context, img *backupImage, run int) ([]time.Duration, error) {
	if len(img.Objects) == 0 {
		return nil, fmt.Errorf("backup %s has no block objects", img.ID)
	}
	core := minio.Core{Client: s.client}
	var ts []time.Duration
	for i := range 3 {
		o := img.Objects[(run*3+i)*7%len(img.Objects)]
		t := time.Now()
		body, _, _, err := core.GetObject(ctx, chainvolBucket, o.Key, minio.GetObjectOptions{})
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", o.Key, err)
		}
		_, err = io.Copy(io.Discard, body)
		body.Close()
		if err != nil {
			return nil, fmt.Errorf("GET %s: %w", o.Key, err)
		}
		ts = append(ts, time.Since(t))
	}
	return ts, nil
}
