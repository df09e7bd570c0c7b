package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/s3utils"
)

// targetHelp says what a valid target URL looks like; every ErrBadTarget
// from URL parsing ends with it.
const targetHelp = "want file:///ABSOLUTE/DIR or s3://BUCKET[/PREFIX][?endpoint=HOST:PORT][&region=REGION][&insecure=true][&ca=/ABS/CA.pem][&style=path|virtual|auto][&imds=true][&lock=governance|compliance&retain=30d]"

// defaultS3Endpoint is used when an s3:// URL names no endpoint.
const defaultS3Endpoint = "s3.amazonaws.com"

// Open opens the backup target named by rawURL:
//
//   - file:///ABSOLUTE/DIR: a local directory, which must already exist (a
//     missing mount must not silently become a directory on the root disk).
//   - s3://BUCKET[/PREFIX][?endpoint=HOST[:PORT]][&region=REGION][&insecure=true]
//     [&ca=/ABS/CA.pem][&style=path|virtual|auto][&imds=true]:
//     keys live under PREFIX/ in BUCKET, reached with path-style requests
//     by default (so any S3-compatible server works without DNS tricks;
//     style=virtual uses BUCKET.HOST, style=auto lets minio-go choose)
//     signed with AWS Signature V4. Credentials: creds when they carry an
//     access key, else the first that minio-go's credential chain finds
//     (s3Credentials): AWS_* environment variables, the shared
//     credentials file, an IRSA web identity token or EKS Pod Identity /
//     ECS container credentials (from their AWS_* variables), and with
//     imds=true the EC2 instance role; with none, anonymous requests.
//     endpoint defaults to s3.amazonaws.com, region to what the server
//     says, insecure=true selects plain HTTP instead of HTTPS, ca names a
//     PEM bundle of CAs trusted besides the system's (a private CA). The
//     store is wrapped in NewRetryStore(DefaultRetryPolicy), and Open
//     checks that the bucket exists before returning. lock=MODE with
//     retain=PERIOD (ParseRetainPeriod) asks that every object a backup
//     keeps carry S3 Object Lock retention in MODE (governance or
//     compliance) until the backup's start + PERIOD (Locker.LockPolicy;
//     FORMAT.md §7.4); the bucket is checked for Object Lock at the first
//     backup, not here.
//
// Credentials never appear in the URL (user:pass@ is refused), in String()
// or in errors. Errors: ErrBadTarget (malformed URL, unknown scheme or
// parameter, missing directory or bucket), ErrAccessDenied (creds refused
// by the bucket check), ErrTransient (server unreachable after retries).
func Open(ctx context.Context, rawURL string, creds Credentials) (Store, error) {
	t, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	if t.s3 == nil {
		return newFileStore(t.dir)
	}
	return openS3(ctx, *t.s3, creds)
}

// CheckURL reports whether rawURL is a target URL Open accepts, without
// opening it: no I/O, so a directory that does not exist yet or a bucket
// out of reach passes. The driver and chainvolctl call it at start so that
// a malformed -backup-target stops them there, not at the first backup.
// Errors: ErrBadTarget, as Open's (they never repeat the URL).
func CheckURL(rawURL string) error {
	_, err := parseURL(rawURL)
	return err
}

// targetURL is a parsed target URL: a directory, or an S3 target.
type targetURL struct {
	dir string
	s3  *s3Target
}

// parseURL checks rawURL's syntax for Open and CheckURL.
func parseURL(rawURL string) (targetURL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		// *url.Error repeats the whole URL, which might hold a secret.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return targetURL{}, fmt.Errorf("%w: cannot parse URL: %v; %s", ErrBadTarget, err, targetHelp)
	}
	if u.User != nil {
		return targetURL{}, fmt.Errorf("%w: credentials do not belong in the URL, pass them separately; %s", ErrBadTarget, targetHelp)
	}
	if u.Opaque != "" || u.Fragment != "" {
		return targetURL{}, fmt.Errorf("%w: %s URL must be of the form %s//...; %s", ErrBadTarget, u.Scheme, u.Scheme, targetHelp)
	}
	switch u.Scheme {
	case "file":
		dir, err := parseFileURL(u)
		return targetURL{dir: dir}, err
	case "s3":
		t, err := parseS3URL(u)
		return targetURL{s3: &t}, err
	}
	return targetURL{}, fmt.Errorf("%w: unknown scheme %q; %s", ErrBadTarget, u.Scheme, targetHelp)
}

func parseFileURL(u *url.URL) (string, error) {
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("%w: %s; %s", ErrBadTarget, why, targetHelp)
	}
	switch {
	case u.Host != "":
		return bad(fmt.Sprintf("file URL has host %q: use three slashes, file:///DIR", u.Host))
	case u.RawQuery != "":
		return bad("file URL takes no query parameters")
	case !path.IsAbs(u.Path) || u.Path == "/":
		return bad(fmt.Sprintf("file URL path %q must be an absolute directory other than /", u.Path))
	}
	for _, seg := range strings.Split(u.Path, "/") {
		if seg == "." || seg == ".." {
			return bad(fmt.Sprintf("file URL path %q has a %q segment", u.Path, seg))
		}
	}
	return path.Clean(u.Path), nil
}

// s3Target is a parsed s3:// URL.
type s3Target struct {
	bucket, prefix, endpoint, region string
	insecure                         bool
	caFile                           string // PEM bundle of extra trusted CAs, "" for none
	style                            string // bucket lookup: "path" (default), "virtual" or "auto"
	imds                             bool   // ask the EC2 instance metadata service for a role's keys
	lock                             LockPolicy
}

// String renders the canonical URL; it holds no secret.
func (t s3Target) String() string {
	s := "s3://" + t.bucket
	if t.prefix != "" {
		s += "/" + strings.TrimSuffix(t.prefix, "/")
	}
	q := url.Values{"endpoint": {t.endpoint}}
	if t.region != "" {
		q.Set("region", t.region)
	}
	if t.insecure {
		q.Set("insecure", "true")
	}
	if t.caFile != "" {
		q.Set("ca", t.caFile)
	}
	if t.style != "" && t.style != "path" {
		q.Set("style", t.style)
	}
	if t.imds {
		q.Set("imds", "true")
	}
	if t.lock.Enabled() {
		q.Set("lock", strings.ToLower(string(t.lock.Mode)))
		q.Set("retain", t.lock.Period.String())
	}
	return s + "?" + q.Encode()
}

func parseS3URL(u *url.URL) (s3Target, error) {
	bad := func(why string) (s3Target, error) {
		return s3Target{}, fmt.Errorf("%w: %s; %s", ErrBadTarget, why, targetHelp)
	}
	t := s3Target{bucket: u.Host, endpoint: defaultS3Endpoint}
	// Strict names (S3 User Guide, "Bucket naming rules") keep path-style
	// requests unambiguous.
	if err := s3utils.CheckValidBucketNameStrict(t.bucket); err != nil {
		return bad(fmt.Sprintf("bucket %q: %v", t.bucket, err))
	}
	if p := strings.TrimPrefix(u.Path, "/"); p != "" {
		p = strings.TrimSuffix(p, "/")
		if err := ValidateKey(p); err != nil {
			return bad(fmt.Sprintf("prefix: %v", err))
		}
		t.prefix = p + "/"
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return bad("cannot parse query parameters")
	}
	for name, vals := range q {
		if len(vals) != 1 {
			return bad(fmt.Sprintf("parameter %q given %d times", name, len(vals)))
		}
		v := vals[0]
		switch name {
		case "endpoint":
			if !validEndpoint(v) {
				return bad(fmt.Sprintf("endpoint %q is not HOST or HOST:PORT (no scheme, no path)", v))
			}
			t.endpoint = v
		case "region":
			t.region = v
		case "insecure":
			if t.insecure, err = strconv.ParseBool(v); err != nil {
				return bad(fmt.Sprintf("insecure=%q is not a boolean", v))
			}
		case "imds":
			if t.imds, err = strconv.ParseBool(v); err != nil {
				return bad(fmt.Sprintf("imds=%q is not a boolean", v))
			}
		case "ca":
			if !path.IsAbs(v) {
				return bad(fmt.Sprintf("ca=%q must be an absolute path to a PEM file", v))
			}
			t.caFile = path.Clean(v)
		case "style":
			if _, ok := bucketLookups[v]; !ok {
				return bad(fmt.Sprintf("style=%q must be path, virtual or auto", v))
			}
			t.style = v
		case "lock":
			if t.lock.Mode, err = parseLockMode(v); err != nil {
				return bad(err.Error())
			}
		case "retain":
			if t.lock.Period, err = ParseRetainPeriod(v); err != nil {
				return bad(err.Error())
			}
		default:
			// Only the name: an unknown parameter could be a misplaced secret.
			return bad(fmt.Sprintf("unknown parameter %q", name))
		}
	}
	if t.insecure && t.caFile != "" {
		return bad("ca= applies to HTTPS; it cannot go with insecure=true")
	}
	if (t.lock.Mode == "") != (t.lock.Period == 0) {
		return bad("lock= and retain= go together (e.g. lock=compliance&retain=30d)")
	}
	return t, nil
}

// validEndpoint accepts HOST or HOST:PORT with PORT in 1..65535, where HOST
// is a name or an IP ([v6] in brackets); a scheme or path is refused.
func validEndpoint(v string) bool {
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		host, port = v, ""
		if strings.Contains(v, ":") {
			return false
		}
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return false
		}
	}
	return host != "" && (s3utils.IsValidDomain(host) || s3utils.IsValidIP(host))
}

func openS3(ctx context.Context, t s3Target, creds Credentials) (Store, error) {
	s3, err := newS3Store(t, creds)
	if err != nil {
		return nil, err
	}
	return checkS3(ctx, t, s3)
}

func newS3Store(t s3Target, creds Credentials) (*s3Store, error) {
	transport, err := s3Transport(t)
	if err != nil {
		return nil, err
	}
	opts := &minio.Options{
		Creds:        s3Credentials(creds, t.imds),
		Secure:       !t.insecure,
		Transport:    transport,
		Region:       t.region,
		BucketLookup: bucketLookups[cmp.Or(t.style, "path")],
		MaxRetries:   1, // NewRetryStore is the one retry layer
	}
	client, err := minio.New(t.endpoint, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadTarget, t, err)
	}
	// The same, allowed checksum headers: only SelfChecked PUTs use it, so
	// that every other request stays as it was.
	checked := *opts
	checked.TrailingHeaders = true
	cc, err := minio.New(t.endpoint, &checked)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrBadTarget, t, err)
	}
	return &s3Store{client: client, checked: cc, transport: transport, bucket: t.bucket, prefix: t.prefix, url: t.String(), lock: t.lock}, nil
}

// checkS3 wraps s3 in the retry layer and checks the bucket and
// credentials with one request.
func checkS3(ctx context.Context, t s3Target, s3 *s3Store) (Store, error) {
	s := NewRetryStore(s3, DefaultRetryPolicy)
	// Fail at open, not mid-backup, on a wrong bucket or wrong credentials.
	// A one-key listing (GET) rather than HeadBucket: a HEAD answer has no
	// body, so a refused key id and a missing bucket cannot be told apart.
	errStop := errors.New("stop")
	if err := s.List(ctx, "", func(ObjectInfo) error { return errStop }); err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("open %s: %w", t, err)
	}
	return s, nil
}

// String shows the access key id and whether a secret and token are set,
// never their values, so that a stray %v cannot leak them.
func (c Credentials) String() string {
	return fmt.Sprintf("Credentials{AccessKeyID: %q, SecretAccessKey: %s, SessionToken: %s}",
		c.AccessKeyID, redacted(c.SecretAccessKey), redacted(c.SessionToken))
}

// GoString is String, for %#v.
func (c Credentials) GoString() string { return c.String() }

func redacted(s string) string {
	if s == "" {
		return "<empty>"
	}
	return "<redacted>"
}
