package main

import (
	"slices"
	"time"
)

// Figure is one measured value with its unit, and the samples whose median
// it is when the measurement was repeated.
type Figure struct {
	Value   float64   `json:"value"`
	Unit    string    `json:"unit"`
	Samples []float64 `json:"samples,omitempty"`
}

func seconds(d time.Duration) Figure { return Figure{Value: d.Seconds(), Unit: "s"} }
func bytesFig(n int64) Figure        { return Figure{Value: float64(n), Unit: "B"} }
func mbps(n int64, d time.Duration) Figure {
	return Figure{Value: float64(n) / 1e6 / d.Seconds(), Unit: "MB/s"}
}

// medianSeconds is the median of repeated timings, samples kept.
func medianSeconds(ds []time.Duration) Figure {
	f := Figure{Unit: "s"}
	for _, d := range ds {
		f.Samples = append(f.Samples, d.Seconds())
	}
	f.Value = median(f.Samples)
	return f
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// maxBytes is the largest of repeated byte counts (peak RSS of several runs).
func maxBytes(ns []int64) Figure {
	f := Figure{Unit: "B"}
	for _, n := range ns {
		f.Samples = append(f.Samples, float64(n))
		f.Value = max(f.Value, float64(n))
	}
	return f
}
