package main

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/minio/minio-go/v7"
	"golang.org/x/sys/unix"
)

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
