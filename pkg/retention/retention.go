// Package retention decides which backups a retention policy keeps:
// keep-last, keep-hourly/-daily/-weekly/-monthly/-yearly (grandfather-
// father-son) and keep-within, with the semantics of restic's forget
// (restic 0.18, internal/restic/snapshot_policy.go), so that operators
// can read restic's documentation for it. Used by `chainvolctl backup
// forget`, `chainvolctl k8s snapshot` and the driver's background gc (the
// policy of a backup VolumeSnapshotClass, pkg/driver retention.go).
//
// Differences from restic: times are bucketed in UTC (restic uses each
// snapshot's own zone), so a policy gives the same answer on every node
// and no DST change makes a day 23 or 25 hours long; keep-within takes a
// plain duration (48h, 7d) instead of restic's y/m/d/h; tags and groups
// are the caller's business (it applies the policy per chain).
package retention

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Unlimited as a count keeps one backup in every bucket (restic's -1).
const Unlimited = -1

// Policy is a retention policy. Counts are numbers of buckets (hours,
// days, ISO weeks, months, years, in UTC) from the newest backup back, the
// newest backup of each bucket being kept; 0 turns a rule off, Unlimited
// counts every bucket. Within keeps every backup newer than the newest
// backup's time minus Within. A backup is kept if any rule keeps it.
type Policy struct {
	Last, Hourly, Daily, Weekly, Monthly, Yearly int
	Within                                       time.Duration
}

// Empty reports whether p has no rule; Apply then keeps everything, and
// callers should refuse it rather than delete nothing by surprise.
func (p Policy) Empty() bool { return p == Policy{} }

// Check returns an error naming the first count below Unlimited or a
// negative Within.
func (p Policy) Check() error {
	for _, r := range p.rules() {
		if r.count < Unlimited {
			return fmt.Errorf("keep-%s %d: want a count >= 0, or -1 for unlimited", r.name, r.count)
		}
	}
	if p.Within < 0 {
		return fmt.Errorf("keep-within %v: want a duration >= 0", p.Within)
	}
	return nil
}

// String renders p as the flags that make it, e.g. "keep-last 3, keep-daily 7".
func (p Policy) String() string {
	var parts []string
	for _, r := range p.rules() {
		if r.count != 0 {
			parts = append(parts, fmt.Sprintf("keep-%s %d", r.name, r.count))
		}
	}
	if p.Within > 0 {
		parts = append(parts, "keep-within "+p.Within.String())
	}
	return strings.Join(parts, ", ")
}

// Item is one backup: an id (unique) and its creation time.
type Item struct {
	ID   string
	Time time.Time
}

// Decision is the verdict on one item: Keep, and the rules that keep it
// (like "daily 2026-11-29", "last 1", "within 48h"); none for an item to
// forget.
type Decision struct {
	Item
	Keep    bool
	Reasons []string
}

// rule is one bucketed rule.
type rule struct {
	name   string
	count  int
	bucket func(t time.Time, nr int) string
}

func (p Policy) rules() []rule {
	return []rule{
		{"last", p.Last, func(_ time.Time, nr int) string { return fmt.Sprint(nr + 1) }},
		{"hourly", p.Hourly, func(t time.Time, _ int) string { return t.Format("2006-01-02T15Z") }},
		{"daily", p.Daily, func(t time.Time, _ int) string { return t.Format("2006-01-02") }},
		{"weekly", p.Weekly, func(t time.Time, _ int) string { y, w := t.ISOWeek(); return fmt.Sprintf("%d-W%02d", y, w) }},
		{"monthly", p.Monthly, func(t time.Time, _ int) string { return t.Format("2006-01") }},
		{"yearly", p.Yearly, func(t time.Time, _ int) string { return t.Format("2006") }},
	}
}

// Apply returns a decision for every item, newest first (ties in time by
// the greater id first, so the answer does not depend on input order).
// As restic does: each rule walks the items newest first and keeps an
// item whose bucket differs from the last bucket it kept, while it has
// counts left, and also the oldest item if counts are left (the longest
// history the counts allow); keep-within is measured from the newest
// item, not from now, so a stopped schedule never forgets its last
// backups. Times are compared in UTC.
func Apply(items []Item, p Policy) []Decision {
	out := make([]Decision, len(items))
	for i, it := range items {
		out[i] = Decision{Item: Item{ID: it.ID, Time: it.Time.UTC()}}
	}
	slices.SortFunc(out, func(a, b Decision) int {
		return cmp.Or(b.Time.Compare(a.Time), strings.Compare(b.ID, a.ID))
	})
	if p.Empty() {
		for i := range out {
			out[i].Keep, out[i].Reasons = true, []string{"no policy"}
		}
		return out
	}
	rules := p.rules()
	last := make([]string, len(rules))
	for nr := range out {
		d := &out[nr]
		for i := range rules {
			r := &rules[i]
			if r.count == 0 {
				continue
			}
			b := r.bucket(d.Time, nr)
			if b == last[i] && nr != len(out)-1 { // restic also keeps the oldest while counts are left
				continue
			}
			d.Keep, last[i] = true, b
			d.Reasons = append(d.Reasons, r.name+" "+b)
			if r.count > 0 {
				r.count--
			}
		}
		if p.Within > 0 && d.Time.After(out[0].Time.Add(-p.Within)) {
			d.Keep = true
			d.Reasons = append(d.Reasons, "within "+p.Within.String())
		}
	}
	return out
}
