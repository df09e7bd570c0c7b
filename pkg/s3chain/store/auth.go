package store

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// bucketLookups maps the style= parameter of an s3:// URL to minio-go's
// bucket lookup: path (https://HOST/BUCKET/KEY, any S3-compatible server),
// virtual (https://BUCKET.HOST/KEY, AWS's preferred form and required for
// buckets created after AWS deprecates path style) or auto (minio-go
// decides from the endpoint).
var bucketLookups = map[string]minio.BucketLookupType{
	"path": minio.BucketLookupPath, "virtual": minio.BucketLookupDNS, "auto": minio.BucketLookupAuto,
}

// s3Credentials returns static when it carries an access key (a
// Secret, a credentials file, CHAINVOL_* variables), else minio-go's
// credential chain, first found wins, as the AWS SDKs order it:
//
//  1. AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY [/ AWS_SESSION_TOKEN];
//  2. the shared credentials file (AWS_SHARED_CREDENTIALS_FILE or
//     ~/.aws/credentials, profile AWS_PROFILE or "default");
//  3. IAM, when its environment says where to ask: an IRSA web identity
//     token (AWS_WEB_IDENTITY_TOKEN_FILE + AWS_ROLE_ARN, exchanged at STS),
//     EKS Pod Identity or ECS (AWS_CONTAINER_CREDENTIALS_FULL_URI or
//     _RELATIVE_URI); or, with imds, the EC2 instance role.
//
// IAM is not asked otherwise: probing the instance metadata address costs
// each request about a second off EC2. With nothing found requests go
// anonymous (public buckets). Temporary credentials are refreshed by
// minio-go before they expire.
func s3Credentials(static Credentials, imds bool) *credentials.Credentials {
	if static.AccessKeyID != "" {
		return credentials.NewStaticV4(static.AccessKeyID, static.SecretAccessKey, static.SessionToken)
	}
	providers := []credentials.Provider{&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}}
	if imds || iamEnvSet() {
		providers = append(providers, &credentials.IAM{})
	}
	return credentials.NewChainCredentials(providers)
}

// iamEnvSet reports whether the environment names an IAM credential
// source other than the instance metadata service.
func iamEnvSet() bool {
	for _, v := range []string{"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// s3Transport is minio-go's default transport, trusting the PEM bundle
// t.caFile besides the system's CAs. The file is read at each Open,
// so a rotated CA bundle (a ConfigMap or Secret volume) applies to the
// next open. Errors: ErrBadTarget when the file cannot be read or holds
// no certificate.
func s3Transport(t s3Target) (http.RoundTripper, error) {
	tr, err := minio.DefaultTransport(!t.insecure)
	if err != nil || t.caFile == "" {
		return tr, err
	}
	pem, err := os.ReadFile(t.caFile)
	if err != nil {
		return nil, fmt.Errorf("%w: ca=%s: %v", ErrBadTarget, t.caFile, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%w: ca=%s holds no PEM certificate", ErrBadTarget, t.caFile)
	}
	tr.TLSClientConfig.RootCAs = pool
	return tr, nil
}

// untrustedTLS reports whether err is a failed verification of the
// server's certificate (unknown CA, wrong host name, expired): a
// configuration fault, ErrBadTarget, that the ca= parameter or the
// endpoint fixes, not an outage to retry.
func untrustedTLS(err error) bool {
	var verify *tls.CertificateVerificationError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &verify) || errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid)
}
