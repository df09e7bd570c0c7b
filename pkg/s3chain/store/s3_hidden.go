package store

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// Reading through delete markers (FORMAT.md §7.4 "Delete markers"). On a
// versioned bucket (AWS versions every Object Lock bucket) a DELETE
// without a version id, anybody's, succeeds as a delete marker over a
// locked object: the locked version stays, but GET, HEAD and LIST answer
// as if the key were gone. The S3 store of a target with lock= therefore
// answers a key whose current version is a marker with the newest older
// version that is still under retention now. The rule that keeps the
// chain protocol's own deletes final: chainvol deletes an object only
// after its retention has passed (gc's candidates, DeleteBackup's
// Deletable, both with a 5-minute margin for the store's clock), so a
// version still under retention was never deleted by the protocol, and a
// version whose retention has passed is never read through.

// maxHiddenVersions bounds the versions of one key looked at (a HEAD
// each): an attacker may pile up versions, but the newest retained one is
// what a reader needs.
const maxHiddenVersions = 16

// HiddenLister is the optional capability of a Store that can list keys
// hidden by delete markers (the S3 store of a lock= target, passed
// through by NewRetryStore). Find it with HiddenListerOf.
type HiddenLister interface {
	// ListHidden calls fn, in lexical key order, for every key under
	// prefix whose current version is a delete marker and that has an
	// older version under Object Lock retention now (the one Get, GetMax
	// and Stat answer with; ObjectInfo is that version's). Keys List
	// shows are never given. extended says whether objects under prefix
	// may have had their retention extended after they were written (a
	// chain config): without it, versions written longer ago than the
	// target's retain= period (and an hour) are skipped without a HEAD.
	ListHidden(ctx context.Context, prefix string, extended bool, fn func(ObjectInfo) error) error
}

// HiddenListerOf returns s's HiddenLister, or nil when s has none.
func HiddenListerOf(s Store) HiddenLister {
	if h, ok := s.(HiddenLister); ok {
		return h
	}
	return nil
}

// readsThrough reports whether the store reads through delete markers:
// only a target with lock=, whose objects' retention tells the protocol's
// deletes from anybody else's, and not for a ctx of CurrentOnly.
func (s *s3Store) readsThrough(ctx context.Context) bool {
	return s.lock.Enabled() && ctx.Value(currentOnlyKey{}) == nil
}

type currentOnlyKey struct{}

// CurrentOnly returns ctx under which the S3 store answers Stat, Get,
// GetMax, Retention and ListHidden from current versions only, as on a
// target without lock=: a key a delete marker hides is ErrObjectNotFound.
// A writer's existence check of the blocks it relies on uses it
// (FORMAT.md §7.4 "Delete markers"): a backup must not rest on a hidden
// version, which is read through only while its retention holds by the
// reader's clock, and so is gone for good at the date, also for a backup
// that extended it and is kept longer; the writer stores the block again
// instead, as a current version.
func CurrentOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, currentOnlyKey{}, true)
}

// hiddenVersion returns the newest version of key, under a delete marker,
// whose retention holds now, with its retention. Errors: ErrObjectNotFound
// (none, or the store does not read through), store errors.
func (s *s3Store) hiddenVersion(ctx context.Context, key string) (minio.ObjectInfo, Retention, error) {
	notFound := fmt.Errorf("s3 get %q: %w", key, ErrObjectNotFound)
	if !s.readsThrough(ctx) {
		return minio.ObjectInfo{}, Retention{}, notFound
	}
	keys, err := s.versions(ctx, key, false)
	if err != nil {
		return minio.ObjectInfo{}, Retention{}, err
	}
	k, ok := keys[key]
	if !ok || !k.marked {
		return minio.ObjectInfo{}, Retention{}, notFound
	}
	return s.retainedVersion(ctx, key, k.older, true)
}

// keyVersions are the versions of one key: whether its current one is a
// delete marker, and the others that are not, newest first.
type keyVersions struct {
	marked bool
	older  []minio.ObjectInfo
}

// versions lists the versions of the keys under prefix (ListObjectVersions;
// exactly key unless recursive) grouped by key without the store's prefix.
// The entries are grouped here, not by their order: minio-go gives a
// page's versions and its delete markers apart (versitygw v1.8.0, at
// least). Only the current entry (IsLatest) says what a key is now.
func (s *s3Store) versions(ctx context.Context, prefix string, recursive bool) (map[string]*keyVersions, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := map[string]*keyVersions{}
	for v := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: s.prefix + prefix, Recursive: true, WithVersions: true}) {
		if v.Err != nil {
			return nil, translateError("list versions of", prefix, v.Err)
		}
		key := strings.TrimPrefix(v.Key, s.prefix)
		if ValidateKey(key) != nil || (!recursive && key != prefix) {
			continue
		}
		k := out[key]
		if k == nil {
			k = &keyVersions{}
			out[key] = k
		}
		switch {
		case v.IsLatest:
			k.marked = v.IsDeleteMarker
		case !v.IsDeleteMarker:
			k.older = append(k.older, v)
		}
	}
	for _, k := range out {
		slices.SortStableFunc(k.older, func(a, b minio.ObjectInfo) int { return b.LastModified.Compare(a.LastModified) })
	}
	return out, ctx.Err()
}

// retainedVersion returns the first of versions (newest first) of key
// whose retention holds now, looking at most at maxHiddenVersions (a HEAD
// each); unless extended, versions written longer ago than the target's
// retain= period (and an hour) are passed over without one. Errors:
// ErrObjectNotFound (none), store errors.
func (s *s3Store) retainedVersion(ctx context.Context, key string, versions []minio.ObjectInfo, extended bool) (minio.ObjectInfo, Retention, error) {
	for i, v := range versions {
		if i >= maxHiddenVersions {
			break
		}
		if !extended && time.Since(v.LastModified) > s.lock.Period+time.Hour {
			continue
		}
		info, ret, err := s.versionRetention(ctx, key, v.VersionID)
		if errors.Is(err, ErrObjectNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return minio.ObjectInfo{}, Retention{}, err
		}
		if ret.Locked(time.Now()) {
			return info, ret, nil
		}
	}
	return minio.ObjectInfo{}, Retention{}, fmt.Errorf("s3 get %q: %w", key, ErrObjectNotFound)
}

// versionRetention is a HEAD of one version of key ("" the current one):
// its info and the retention its x-amz-object-lock headers give (S3 API
// Reference, HeadObject), or for a version whose HEAD has none, what
// getRetention reads.
func (s *s3Store) versionRetention(ctx context.Context, key, versionID string) (minio.ObjectInfo, Retention, error) {
	info, err := s.client.StatObject(ctx, s.bucket, s.prefix+key, minio.StatObjectOptions{VersionID: versionID})
	if err != nil {
		return info, Retention{}, translateError("stat", key, err)
	}
	mode, until := info.Metadata.Get("X-Amz-Object-Lock-Mode"), info.Metadata.Get("X-Amz-Object-Lock-Retain-Until-Date")
	if (mode == "" || until == "") && versionID != "" {
		// versitygw v1.8.0 sends no lock headers for a HEAD naming a version.
		mode, until, err = s.getRetention(ctx, key, versionID)
		if err != nil {
			return info, Retention{}, err
		}
	}
	if mode == "" || until == "" {
		return info, Retention{}, nil
	}
	t, err := time.Parse(time.RFC3339, until)
	if err != nil {
		return info, Retention{}, fmt.Errorf("s3 stat %q: retain-until date %q: %w", key, until, err)
	}
	return info, Retention{Mode: LockMode(strings.ToUpper(mode)), Until: t.UTC()}, nil
}

// ListHidden lists the bucket's versions under prefix (ListObjectVersions,
// in key order, each key's newest first) and gives each key whose newest
// entry is a delete marker and whose newest retained version
// (hiddenVersion's rule) exists. Unless extended, a version older than
// the target's retain= period is skipped without a HEAD: a manifest,
// state record or ownership record is retained from its writer's start
// and never extended, so the protocol's own deletes (after the date) do
// not cost a HEAD per listing for ever. A target whose retain= was
// shortened may so miss a hidden record of the longer period (it stays
// hidden, as before; never the other way round).
func (s *s3Store) ListHidden(ctx context.Context, prefix string, extended bool, fn func(ObjectInfo) error) error {
	if err := ValidatePrefix(prefix); err != nil || !s.readsThrough(ctx) {
		return err
	}
	keys, err := s.versions(ctx, prefix, true)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(keys))
	for key, k := range keys {
		if k.marked && len(k.older) > 0 {
			names = append(names, key)
		}
	}
	slices.Sort(names)
	for _, key := range names {
		info, _, err := s.retainedVersion(ctx, key, keys[key].older, extended)
		if errors.Is(err, ErrObjectNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if err := fn(ObjectInfo{Key: key, Size: info.Size, ModTime: info.LastModified}); err != nil {
			return err
		}
	}
	return nil
}

var _ HiddenLister = (*retryStore)(nil)

// ListHidden is the inner store's, retried as List is (a repeat may give
// a key twice to fn; callers collect keys); nothing without one.
func (r *retryStore) ListHidden(ctx context.Context, prefix string, extended bool, fn func(ObjectInfo) error) error {
	h := HiddenListerOf(r.inner)
	if h == nil {
		return nil
	}
	return r.policy.do(ctx, func() error { return h.ListHidden(ctx, prefix, extended, fn) })
}

// getRetention is GetObjectRetention of one version of key (S3 API
// Reference), sent presigned and parsed here: versitygw v1.8.0 answers
// with an <ObjectLockRetention> document, which minio-go's
// GetObjectRetention refuses (it wants <Retention>, as AWS sends); any
// root element is taken. A version without retention
// (NoSuchObjectLockConfiguration, or the server's 404 for it) gives "".
func (s *s3Store) getRetention(ctx context.Context, key, versionID string) (mode, until string, err error) {
	u, err := s.client.Presign(ctx, http.MethodGet, s.bucket, s.prefix+key, time.Minute,
		url.Values{"retention": {""}, "versionId": {versionID}})
	if err != nil {
		return "", "", translateError("get retention of", key, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", "", fmt.Errorf("s3 get retention of %q: %w", key, err)
	}
	resp, err := (&http.Client{Transport: s.transport}).Do(req)
	if err != nil {
		return "", "", translateError("get retention of", key, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return "", "", translateError("get retention of", key, err)
	}
	if resp.StatusCode != http.StatusOK {
		if bytes.Contains(body, []byte("NoSuchObjectLockConfiguration")) || bytes.Contains(body, []byte("ObjectLock configuration")) {
			return "", "", nil
		}
		return "", "", translateError("get retention of", key, minio.ToErrorResponse(minio.ErrorResponse{
			StatusCode: resp.StatusCode, Code: http.StatusText(resp.StatusCode), Message: string(body)}))
	}
	var doc struct {
		Mode            string `xml:"Mode"`
		RetainUntilDate string `xml:"RetainUntilDate"`
	}
	if err := xml.Unmarshal(body, &doc); err != nil {
		return "", "", fmt.Errorf("s3 get retention of %q: %w", key, err)
	}
	return doc.Mode, doc.RetainUntilDate, nil
}
