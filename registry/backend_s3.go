package registry

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/schedrl/schedrl/internal/config"
)

// s3Backend stores objects in an S3 bucket (MinIO in the tests) under a key prefix. Create
// uses a conditional PUT (If-None-Match: *), so two writers of one key cannot both succeed.
type s3Backend struct {
	client         *minio.Client
	bucket, prefix string
}

func newS3Backend(bucket, prefix string, cfg config.S3Config) (*s3Backend, error) {
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{}, &credentials.EnvMinio{},
	})
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	}
	// Fail fast on a dead endpoint instead of minio-go's default ten retries.
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds: creds, Secure: cfg.TLS, Region: cfg.Region, Transport: transport, MaxRetries: 3,
	})
	if err != nil {
		return nil, fmt.Errorf("registry store s3://%s: endpoint %q: %w", bucket, cfg.Endpoint, err)
	}
	return &s3Backend{client: client, bucket: bucket, prefix: prefix}, nil
}

func (b *s3Backend) key(k string) string {
	if b.prefix == "" {
		return k
	}
	return b.prefix + "/" + k
}

func (b *s3Backend) Create(ctx context.Context, key string, r io.Reader, size int64) error {
	// One PUT, not multipart: the condition must apply to the object as a whole.
	opts := minio.PutObjectOptions{DisableMultipart: true}
	opts.SetMatchETagExcept("*")
	if _, err := b.client.PutObject(ctx, b.bucket, b.key(key), r, size, opts); err != nil {
		switch minio.ToErrorResponse(err).StatusCode {
		case http.StatusPreconditionFailed, http.StatusConflict:
			return fmt.Errorf("%s: %w", b.URI(key), ErrExists)
		}
		return fmt.Errorf("put %s: %w", b.URI(key), err)
	}
	return nil
}

func (b *s3Backend) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if _, err := b.client.PutObject(ctx, b.bucket, b.key(key), r, size, minio.PutObjectOptions{DisableMultipart: true}); err != nil {
		return fmt.Errorf("put %s: %w", b.URI(key), err)
	}
	return nil
}

func (b *s3Backend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	obj, err := b.client.GetObject(ctx, b.bucket, b.key(key), minio.GetObjectOptions{})
	if err == nil {
		// GetObject is lazy: Stat makes a missing key fail here rather than on first Read.
		_, err = obj.Stat()
	}
	if err != nil {
		if obj != nil {
			obj.Close()
		}
		if minio.ToErrorResponse(err).StatusCode == http.StatusNotFound {
			return nil, fmt.Errorf("%s: %w", b.URI(key), ErrNotFound)
		}
		return nil, fmt.Errorf("get %s: %w", b.URI(key), err)
	}
	return obj, nil
}

func (b *s3Backend) Delete(ctx context.Context, key string) error {
	if err := b.client.RemoveObject(ctx, b.bucket, b.key(key), minio.RemoveObjectOptions{}); err != nil {
		return fmt.Errorf("delete %s: %w", b.URI(key), err)
	}
	return nil
}

func (b *s3Backend) List(ctx context.Context, prefix string) ([]string, error) {
	full := b.key(prefix)
	var names []string
	for obj := range b.client.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: full}) {
		if obj.Err != nil {
			return nil, fmt.Errorf("list %s: %w", b.URI(prefix), obj.Err)
		}
		names = append(names, strings.TrimPrefix(obj.Key, full))
	}
	sort.Strings(names)
	return names, nil
}

func (b *s3Backend) URI(key string) string {
	return "s3://" + path.Join(b.bucket, b.key(key))
}
