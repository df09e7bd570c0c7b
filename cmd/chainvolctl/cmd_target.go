package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
	"github.com/chainvol/chainvol/pkg/s3chain/target"
)

func (a *app) newTargetCmd() *cobra.Command {
	return parentCmd(&cobra.Command{
		Use:   "target",
		Short: "List the configured backup targets and check that they work",
		Long: `Backup targets are where backup chains are stored: a local directory
(file:///abs/dir) or an S3 bucket prefix (s3://BUCKET/PREFIX?endpoint=...).
They are configured with --target NAME=URL or CHAINVOL_TARGETS; with neither,
the only target is "default", the driver's embedded file://STATE_DIR/backups.`,
		Example: `  chainvolctl target ls
  chainvolctl --target a=file:///srv/backups --target b='s3://backups/x?endpoint=10.0.0.5:9000&region=us-east-1' target check`,
	}, a.newTargetLsCmd(), a.newTargetCheckCmd(), a.newTargetInitCmd())
}

// targetRow is one target in listings; JSON field names are stable.
type targetRow struct {
	Name      string `json:"name"`
	URL       string `json:"url"`
	Default   bool   `json:"default"`
	Reachable *bool  `json:"reachable,omitempty"`
	Writable  *bool  `json:"writable,omitempty"`
	// Conditional: the target creates objects atomically if absent (S3
	// If-None-Match: *, link(2) for files); false means chainvol cannot
	// create chains there (s3chain refuses with store.ErrBadTarget). Set
	// by check only.
	Conditional *bool `json:"conditionalWrites,omitempty"`
	// ObjectLock describes the bucket's S3 Object Lock (mode and default
	// retention) and the retention the target asks for (lock=, retain=);
	// set by check, for S3 targets only.
	ObjectLock string `json:"objectLock,omitempty"`
	// HiddenObjects counts the objects of a lock= target that delete
	// markers hide over versions still under retention (a plain DELETE
	// on a versioned bucket; chainvol reads through them until their
	// dates, docs/FORMAT.md §7.4); set by check.
	HiddenObjects int    `json:"hiddenObjects,omitempty"`
	Error         string `json:"error,omitempty"`
	Note          string `json:"note,omitempty"` // e.g. an empty file target
}

func (a *app) newTargetLsCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Short:   "List the configured backup targets",
		Long:    "List the configured backup targets, the default first. Nothing is contacted; see 'target check'.",
		Example: "  chainvolctl target ls -o json",
		Args:    args(cobra.NoArgs),
		RunE: a.run(func(cmd *cobra.Command, _ []string) error {
			set, err := a.targetSet()
			if err != nil {
				return err
			}
			rows := []targetRow{}
			for i, t := range set.Targets() {
				rows = append(rows, targetRow{Name: t.Name, URL: safeURL(t.URL), Default: i == 0})
			}
			return a.emit(cmd, rows, func(w io.Writer) error {
				tb := newTable(w, "NAME", "DEFAULT", "URL")
				for _, r := range rows {
					tb.row(r.Name, fmt.Sprint(r.Default), r.URL)
				}
				return tb.flush()
			})
		}),
	}
}

func (a *app) newTargetCheckCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "check [NAME...]",
		Short: "Check that backup targets are reachable and writable",
		Long: `Check each configured target (or the named ones): list it (reachable), then
write, read back and delete a small probe object under chainvolctl-check/
(writable), and create one twice with a conditional write (If-None-Match: *)
to report whether the target supports conditional writes (chainvol needs them
to create a chain's first backup). For S3 it also reports the bucket's
Object Lock (enabled, default retention) and the retention the target asks
for (lock=, retain=), and fails a target whose bucket cannot keep it.
Exits 1 if any target fails.`,
		Example: "  chainvolctl target check\n  chainvolctl --target off='s3://chainvol-offsite?endpoint=10.0.0.5:9000&region=us-east-1' target check off",
		RunE: a.run(func(cmd *cobra.Command, names []string) error {
			set, err := a.targetSet()
			if err != nil {
				return err
			}
			if len(names) == 0 {
				for _, t := range set.Targets() {
					names = append(names, t.Name)
				}
			}
			for _, n := range names {
				if _, err := set.Lookup(n); err != nil {
					return usageError{explain(err)}
				}
			}
			rows, failed := []targetRow{}, 0
			for _, n := range names {
				r := a.checkTarget(cmd.Context(), set, n)
				if r.Error != "" {
					failed++
				}
				rows = append(rows, r)
			}
			err = a.emit(cmd, rows, func(w io.Writer) error { return checkTable(w, rows...) })
			if err == nil && failed > 0 {
				err = fmt.Errorf("%d of %d targets failed the check", failed, len(rows))
			}
			return err
		}),
	}
}

// checkTable prints the rows of a check.
func checkTable(w io.Writer, rows ...targetRow) error {
	tb := newTable(w, "NAME", "REACHABLE", "WRITABLE", "URL", "ERROR/NOTE")
	for _, r := range rows {
		tb.row(r.Name, fmtBool(r.Reachable), fmtBool(r.Writable), r.URL, orDash(r.Error+r.Note))
	}
	return tb.flush()
}

// checkTarget lists the target, then writes, reads and deletes a probe.
func (a *app) checkTarget(ctx context.Context, set *target.Set, name string) targetRow {
	r := targetRow{Name: name}
	f, t := false, true
	r.Reachable, r.Writable = &f, &f
	tg, err := set.Lookup(name)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.URL, r.Default = safeURL(tg.URL), name == set.Default()
	if note, empty := emptyFileTarget(set, name); empty { // not unreachable: created by the first backup
		r.Reachable, r.Writable, r.Note = &t, nil, note
		return r
	}
	repo, err := set.Open(ctx, name, envSecrets())
	if err != nil {
		r.Error = oneLine(explain(err))
		return r
	}
	store := repo.Store()
	if _, err := repo.Chains(ctx); err != nil {
		r.Error = oneLine(explain(err))
		return r
	}
	r.Reachable = &t
	buf := make([]byte, 16)
	_, _ = rand.Read(buf)
	key := "chainvolctl-check/" + hex.EncodeToString(buf)
	var cond bool
	err = roundTrip(ctx, store, key, buf)
	if err == nil {
		cond, err = checkConditional(ctx, store, key+"-if-absent", buf)
	}
	if err != nil {
		r.Error = oneLine(explain(err))
		return r
	}
	r.Writable, r.Conditional = &t, &cond
	r.Note = "conditional writes: supported"
	if !cond {
		r.Note = "conditional writes: not supported (new chains are refused; use a server that supports If-None-Match)"
	}
	if err := checkObjectLock(ctx, store, &r); err != nil {
		r.Error = oneLine(explain(err))
	}
	return r
}

// checkObjectLock sets r.ObjectLock for a store with Object Lock (S3) and
// fails, naming the bucket setting, when the target asks for retention
// the bucket cannot keep.
func checkObjectLock(ctx context.Context, st store.Store, r *targetRow) error {
	l := store.LockerOf(st)
	if l == nil {
		return nil
	}
	bl, err := l.BucketLock(ctx)
	if err != nil {
		return err
	}
	bucket := "bucket without Object Lock"
	switch {
	case bl.Enabled && bl.DefaultMode != "":
		bucket = fmt.Sprintf("bucket Object Lock enabled, default retention %s %d days", bl.DefaultMode, bl.DefaultDays)
	case bl.Enabled:
		bucket = "bucket Object Lock enabled, no default retention"
	}
	p := l.LockPolicy()
	r.ObjectLock = bucket + "; target retention: " + p.String()
	r.Note += "; " + r.ObjectLock
	if p.Enabled() && (!bl.Enabled || bl.DefaultMode != "") {
		return fmt.Errorf("%w: the target asks for %s but the bucket cannot keep it: it needs Object Lock enabled (ObjectLockEnabled) and no default retention rule", store.ErrNoObjectLock, p)
	}
	return countHidden(ctx, st, r)
}

// countHidden sets r.HiddenObjects for a lock= target whose store reads
// through delete markers, and names them in the note: somebody deleted
// objects chainvol keeps (they stay readable until their dates; the
// markers can be removed by version id).
func countHidden(ctx context.Context, st store.Store, r *targetRow) error {
	h := store.HiddenListerOf(st)
	if h == nil || !store.LockerOf(st).LockPolicy().Enabled() {
		return nil
	}
	err := h.ListHidden(ctx, "", false, func(store.ObjectInfo) error { r.HiddenObjects++; return nil })
	if err != nil {
		return err
	}
	if r.HiddenObjects > 0 {
		r.Note += fmt.Sprintf("; %d objects hidden by delete markers over versions still under retention (somebody deleted "+
			"them without a version id; chainvol reads through the markers until the dates; remove the markers with "+
			"aws s3api delete-object --key KEY --version-id MARKER-ID)", r.HiddenObjects)
	}
	return nil
}

// roundTrip writes data under key, reads it back and deletes it.
func roundTrip(ctx context.Context, st store.Store, key string, data []byte) error {
	if err := st.Put(ctx, key, data); err != nil {
		return err
	}
	// The bound is the probe's size: more back is as wrong as other bytes.
	got, err := st.GetMax(ctx, key, int64(len(data)))
	if err == nil && !bytes.Equal(got, data) {
		err = errors.New("probe object read back differs from what was written")
	}
	if derr := st.Delete(ctx, key); err == nil {
		err = derr
	}
	return err
}

// checkConditional creates key with PutIfAbsent, tries again, and deletes
// it. It reports false when the store answers ErrNotAtomic (a server that
// ignores If-None-Match), and an error when the second create is not
// refused with ErrObjectExists or the object is not the first one.
func checkConditional(ctx context.Context, st store.Store, key string, data []byte) (bool, error) {
	err := st.PutIfAbsent(ctx, key, data)
	if errors.Is(err, store.ErrNotAtomic) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	err = st.PutIfAbsent(ctx, key, []byte("second"))
	if errors.Is(err, store.ErrObjectExists) {
		err = nil
		if got, gerr := st.GetMax(ctx, key, int64(len(data))); gerr != nil || !bytes.Equal(got, data) {
			err = fmt.Errorf("conditional write: the first object did not survive a refused second write (%v)", gerr)
		}
	} else if err == nil {
		err = errors.New("conditional write: a second create of the same key succeeded; the target overwrote it")
	}
	if derr := st.Delete(ctx, key); err == nil {
		err = derr
	}
	return err == nil, err
}

// oneLine keeps an error with its hint on one table row.
func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

func fmtBool(b *bool) string {
	if b == nil {
		return "-"
	}
	if *b {
		return "yes"
	}
	return "no"
}

// safeURL drops any user:password from a URL before it is printed.
func safeURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.User = nil
	return u.String()
}
