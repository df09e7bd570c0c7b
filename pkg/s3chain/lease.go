package s3chain

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chainvol/chainvol/pkg/s3chain/store"
)

// Lease kinds: the first word of a lock object's name under pending/<chain>/
// (FORMAT.md §7). A legacy marker (version 1: pending/<chain>/TOKEN.json)
// counts as a writer.
const (
	kindWriter = "writer" // a backup, or a delete that rewrites manifests
	kindGC     = "gc"
)

// lease is a held lock object pending/<chain>/KIND-TOKEN.json. A goroutine
// refreshes it every ttl/5. It is valid, by this process's monotonic clock,
// until ttl - ttl/4 after the start of the last refresh that completed in
// time; once a refresh misses that deadline the lease is lost for good and
// ctx (from hold) is cancelled with ErrLeaseLost. Others judge a lock live
// by the store's clock alone: its ModTime within ttl of their own lock's.
type lease struct {
	r      *Repo
	chain  string
	key    string
	ttl    time.Duration
	server time.Time // the store's ModTime of the first write
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   chan struct{}

	mu         sync.Mutex
	validUntil time.Time
	lost       bool
}

type lockBody struct {
	FormatVersion int       `json:"formatVersion"`
	Chain         string    `json:"chain"`
	Kind          string    `json:"kind"`
	Host          string    `json:"host"`
	RefreshedAt   time.Time `json:"refreshedAt"`
}

// hold writes a new lock of kind in chain and starts refreshing it. The
// returned context is ctx, cancelled with ErrLeaseLost when the lease is
// lost; release stops the refresher and deletes the lock.
func (r *Repo) hold(ctx context.Context, chain, kind string) (*lease, context.Context, error) {
	token := make([]byte, 8)
	_, _ = rand.Read(token)
	l := &lease{r: r, chain: chain, ttl: r.lease, stop: make(chan struct{}), done: make(chan struct{}),
		key: pendingKey(chain, kind+"-"+hex.EncodeToString(token))}
	start := time.Now()
	if err := l.write(ctx); err != nil {
		return nil, nil, fmt.Errorf("write %s lock in chain %q: %w", kind, chain, err)
	}
	oi, err := r.store.Stat(store.CurrentOnly(ctx), l.key)
	if err != nil {
		r.store.Delete(context.WithoutCancel(ctx), l.key)
		return nil, nil, fmt.Errorf("read back %s lock in chain %q: %w", kind, chain, err)
	}
	l.server, l.validUntil = oi.ModTime, start.Add(l.validity())
	lctx, cancel := context.WithCancelCause(ctx)
	l.cancel = cancel
	go l.refresh()
	return l, lctx, nil
}

// Locks and doom records are never read through a delete marker
// (store.CurrentOnly, FORMAT.md §7.4): they carry no retention of the
// protocol's, so a hidden version of one is one the protocol deleted
// (released, taken over, removed) while a bucket rule locked it.

// validity is how long after a refresh starts the holder relies on it: a
// quarter of the TTL is left for requests in flight and clock-rate drift.
func (l *lease) validity() time.Duration { return l.ttl - l.ttl/4 }

func (l *lease) write(ctx context.Context) error {
	host, _ := os.Hostname()
	kind, _, _ := strings.Cut(l.key[strings.LastIndexByte(l.key, '/')+1:], "-")
	data, _ := json.Marshal(lockBody{FormatVersion, l.chain, kind, host, time.Now().UTC()})
	return l.r.store.Put(ctx, l.key, data)
}

func (l *lease) refresh() {
	defer close(l.done)
	t := time.NewTicker(l.ttl / 5)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		start := time.Now()
		ctx, cancel := context.WithDeadline(context.Background(), l.deadline())
		// A lock that vanished was taken over: never write it back.
		_, err := l.r.store.Stat(store.CurrentOnly(ctx), l.key)
		gone := errors.Is(err, store.ErrObjectNotFound)
		if err == nil {
			err = l.write(ctx)
		}
		cancel()
		l.mu.Lock()
		switch {
		case l.lost:
		case gone:
			l.lost = true
		case err == nil && time.Now().Before(l.validUntil):
			l.validUntil = start.Add(l.validity())
		case time.Now().After(l.validUntil):
			l.lost = true
		}
		lost := l.lost
		l.mu.Unlock()
		if lost {
			l.cancel(fmt.Errorf("%w: lock %s of chain %q was taken over or not refreshed within %v", ErrLeaseLost, l.key, l.chain, l.validity()))
			return
		}
	}
}

func (l *lease) deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.validUntil
}

// bound returns ctx with the lease's validity as deadline, for a request
// that must not take effect after the lease may have been taken over (a
// manifest commit, a gc delete): the client abandons it instead. The
// protocol assumes an abandoned request does not land later than TTL/4
// after its deadline (FORMAT.md §7).
func (l *lease) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, l.deadline())
}

// valid fails with ErrLeaseLost once the lease may have been taken over.
func (l *lease) valid() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lost || time.Now().After(l.validUntil) {
		l.lost = true
		return fmt.Errorf("%w: lock %s of chain %q expired", ErrLeaseLost, l.key, l.chain)
	}
	return nil
}

// held checks, after a commit, that the lease is valid and its lock still
// exists (nobody took it over): only then may the commit be reported.
func (l *lease) held(ctx context.Context) error {
	if err := l.valid(); err != nil {
		return err
	}
	if _, err := l.r.store.Stat(store.CurrentOnly(ctx), l.key); err != nil {
		return fmt.Errorf("%w: lock %s of chain %q: %w", ErrLeaseLost, l.key, l.chain, err)
	}
	return l.valid()
}

// release stops refreshing and deletes the lock, even when ctx is done.
func (l *lease) release(ctx context.Context) {
	close(l.stop)
	<-l.done
	l.cancel(nil)
	_ = l.r.store.Delete(context.WithoutCancel(ctx), l.key)
}

// lockInfo is one lock object found in a chain's pending/ directory.
type lockInfo struct {
	store.ObjectInfo
	kind string
}

// locks lists the chain's lock objects other than own.
func (r *Repo) locks(ctx context.Context, chain, own string) ([]lockInfo, error) {
	var out []lockInfo
	dir := pendingDir(chain)
	err := r.store.List(ctx, dir, func(oi store.ObjectInfo) error {
		if oi.Key == own {
			return nil
		}
		out = append(out, lockInfo{oi, lockKind(strings.TrimPrefix(oi.Key, dir))})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list locks of chain %q: %w", chain, err)
	}
	return out, nil
}

// live reports whether lock o is live as seen from a lock written at the
// store time now: refreshed within the TTL.
func (r *Repo) live(o lockInfo, now time.Time) bool { return now.Sub(o.ModTime) < r.lease }

// holdWriter takes a writer lease on chain, waiting (with backoff, while
// ctx allows, a little over one TTL, after which an abandoned gc lock is
// stale) while a live gc lock exists: a gc that began first must finish
// before anyone may reuse the chain's blocks. Errors: ErrChainBusy when
// the gc outlasts the wait, store errors.
func (r *Repo) holdWriter(ctx context.Context, chain string) (*lease, context.Context, error) {
	give := time.Now().Add(r.lease + r.lease/2)
	wait := 50 * time.Millisecond
	for {
		l, lctx, err := r.hold(ctx, chain, kindWriter)
		if err != nil {
			return nil, nil, err
		}
		others, err := r.locks(ctx, chain, l.key)
		if err != nil {
			l.release(ctx)
			return nil, nil, err
		}
		busy := false
		for _, o := range others {
			busy = busy || (o.kind == kindGC && r.live(o, l.server))
		}
		if !busy {
			return l, lctx, nil
		}
		l.release(ctx)
		if time.Now().Add(wait).After(give) {
			return nil, nil, fmt.Errorf("%w: garbage collection of chain %q is running", ErrChainBusy, chain)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// errLeaseGone tells whether err means the lease ended (not the caller's ctx).
func errLeaseGone(err error) bool { return errors.Is(err, ErrLeaseLost) }

// leaseErr is err of work done under a lease whose context lctx (from
// hold, derived from ctx) ended: when the lease was lost and not the
// caller's ctx, the loss (ErrLeaseLost, retryable) rather than the
// "context canceled" the work saw; otherwise err unchanged.
func leaseErr(ctx, lctx context.Context, err error) error {
	if cause := context.Cause(lctx); err != nil && errLeaseGone(cause) && ctx.Err() == nil {
		return cause
	}
	return err
}
