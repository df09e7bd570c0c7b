package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds the retries of NewRetryStore. Zero fields take the
// defaults of DefaultRetryPolicy.
type RetryPolicy struct {
	// Attempts is the total number of tries of one operation, first
	// included (1 = no retry).
	Attempts int
	// BaseDelay is the ceiling of the first wait; it doubles per retry.
	BaseDelay time.Duration
	// MaxDelay caps the ceiling of every wait.
	MaxDelay time.Duration
}

// DefaultRetryPolicy is what Open applies to S3 targets: 6 tries, waits
// drawn from [0, 0.25 s), [0, 0.5 s), ... capped at 8 s, so one operation
// gives up after at most 0.25+0.5+1+2+4 = 7.75 s of waiting plus the time
// of its requests. It is the only retry layer: minio-go's own retries are
// turned off (Options.MaxRetries = 1).
var DefaultRetryPolicy = RetryPolicy{Attempts: 6, BaseDelay: 250 * time.Millisecond, MaxDelay: 8 * time.Second}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Attempts <= 0 {
		p.Attempts = DefaultRetryPolicy.Attempts
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultRetryPolicy.BaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultRetryPolicy.MaxDelay
	}
	return p
}

// delay returns the wait before retry number n (0-based): "full jitter",
// uniform in [0, min(MaxDelay, BaseDelay*2^n)), which spreads clients that
// were throttled together (AWS Architecture Blog, "Exponential Backoff and
// Jitter", 2015; S3 asks clients to back off on SlowDown/503).
func (p RetryPolicy) delay(n int) time.Duration {
	ceil := p.MaxDelay
	if n < 30 && p.BaseDelay<<n < p.MaxDelay {
		ceil = p.BaseDelay << n
	}
	return rand.N(ceil) + 1
}

// do runs op until it succeeds, fails with an error that is not
// ErrTransient, runs out of attempts or ctx ends. It returns op's last
// error, or ctx's error (wrapping the last one) when cancelled while
// waiting.
func (p RetryPolicy) do(ctx context.Context, op func() error) error {
	p = p.withDefaults()
	var err error
	for n := range p.Attempts {
		if err = op(); err == nil || !errors.Is(err, ErrTransient) || ctx.Err() != nil {
			return err
		}
		if n == p.Attempts-1 {
			break
		}
		t := time.NewTimer(p.delay(n))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (while retrying after: %w)", ctx.Err(), err)
		case <-t.C:
		}
	}
	return fmt.Errorf("gave up after %d attempts: %w", p.Attempts, err)
}

// retryStore retries the operations of inner that fail with ErrTransient.
type retryStore struct {
	inner  Store
	policy RetryPolicy
}

// NewRetryStore wraps inner so that every operation failing with
// ErrTransient (throttling, 5xx, network) is tried again after an
// exponential, jittered wait, up to policy.Attempts tries; any other error
// (ErrObjectNotFound, ErrAccessDenied, ErrBadTarget, ErrInvalidKey, ctx's
// own) returns at once. All operations but PutIfAbsent are idempotent,
// which makes retrying them safe; PutIfAbsent recognises its own earlier
// write (see there). A List that fails part-way resumes after the last key
// it delivered, so fn sees every key once, in order.
func NewRetryStore(inner Store, policy RetryPolicy) Store {
	return &retryStore{inner: inner, policy: policy.withDefaults()}
}

func (r *retryStore) String() string { return r.inner.String() }

func (r *retryStore) Put(ctx context.Context, key string, data []byte) error {
	return r.policy.do(ctx, func() error { return r.inner.Put(ctx, key, data) })
}

func (r *retryStore) Get(ctx context.Context, key string) ([]byte, error) {
	return r.GetMax(ctx, key, maxObjectSize)
}

func (r *retryStore) GetMax(ctx context.Context, key string, maxBytes int64) (data []byte, err error) {
	err = r.policy.do(ctx, func() error { data, err = r.inner.GetMax(ctx, key, maxBytes); return err })
	return data, err
}

// PutIfAbsent is the one operation that is not idempotent: an attempt
// that stored the object but whose answer was lost (a reset connection, a
// 503 after the write) makes the next attempt fail with ErrObjectExists,
// against its own object. So after any transient failure, an
// ErrObjectExists is checked by reading the object back: the very bytes
// of data mean an earlier attempt won, and PutIfAbsent succeeds. Two
// writers of identical bytes therefore cannot be told apart; callers that
// need to know which writer won put a writer-unique nonce in data.
func (r *retryStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	uncertain := false // an earlier attempt may have stored data
	return r.policy.do(ctx, func() error {
		err := r.inner.PutIfAbsent(ctx, key, data)
		if errors.Is(err, ErrObjectExists) && uncertain {
			got, gerr := r.inner.GetMax(ctx, key, int64(len(data)))
			switch {
			case gerr == nil && bytes.Equal(got, data):
				return nil
			case errors.Is(gerr, ErrTransient):
				return gerr // read it back on the next attempt
			}
		}
		if errors.Is(err, ErrTransient) {
			uncertain = true
		}
		return err
	})
}

func (r *retryStore) Stat(ctx context.Context, key string) (info ObjectInfo, err error) {
	err = r.policy.do(ctx, func() error { info, err = r.inner.Stat(ctx, key); return err })
	return info, err
}

func (r *retryStore) Delete(ctx context.Context, key string) error {
	return r.policy.do(ctx, func() error { return r.inner.Delete(ctx, key) })
}

func (r *retryStore) List(ctx context.Context, prefix string, fn func(ObjectInfo) error) error {
	var last string // the last key handed to fn; keys come in lexical order
	var fnErr error // fn's own error is the caller's, never retried
	err := r.policy.do(ctx, func() error {
		err := r.inner.List(ctx, prefix, func(info ObjectInfo) error {
			if last != "" && info.Key <= last {
				return nil // delivered before the retry
			}
			if fnErr = fn(info); fnErr != nil {
				return fnErr
			}
			last = info.Key
			return nil
		})
		if fnErr != nil {
			return nil // stop retrying, even if fn's error is ErrTransient
		}
		return err
	})
	if fnErr != nil {
		return fnErr
	}
	return err
}
