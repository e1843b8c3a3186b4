package registry

import (
	"bytes"
	"context"
	"errors"
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
// Every request has a deadline (cfg.Timeout); the idempotent ones (get, list, put, delete)
// are retried with exponential backoff, a conditional create is not: a create that timed
// out may have happened.
type s3Backend struct {
	client         *minio.Client
	bucket, prefix string
	endpoint       string
	timeout        time.Duration
	retries        int
	backoff        time.Duration
}

func newS3Backend(bucket, prefix string, cfg config.S3Config) (*s3Backend, error) {
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{}, &credentials.EnvMinio{},
	})
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		creds = credentials.NewStaticV4(cfg.AccessKey, cfg.SecretKey, "")
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.DialContext = (&net.Dialer{Timeout: min(5*time.Second, cfg.Timeout)}).DialContext
	transport.ResponseHeaderTimeout = cfg.Timeout
	// MaxRetries 1: one attempt per call; the retries are ours, for idempotent calls only.
	client, err := minio.New(cfg.Endpoint, &minio.Options{
		Creds: creds, Secure: cfg.TLS, Region: cfg.Region, Transport: transport, MaxRetries: 1,
	})
	if err != nil {
		return nil, fmt.Errorf("registry store s3://%s: endpoint %q: %w", bucket, cfg.Endpoint, err)
	}
	return &s3Backend{client: client, bucket: bucket, prefix: prefix, endpoint: cfg.Endpoint,
		timeout: cfg.Timeout, retries: cfg.Retries, backoff: cfg.Backoff}, nil
}

func (b *s3Backend) key(k string) string {
	if b.prefix == "" {
		return k
	}
	return b.prefix + "/" + k
}

// call runs one request under the per-request deadline, retrying an idempotent one on a
// connection error, a timeout or a 5xx answer. Errors name the operation, the object and the
// endpoint.
func (b *s3Backend) call(ctx context.Context, op, key string, idempotent bool, req func(ctx context.Context) error) error {
	wait := b.backoff
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, b.timeout)
		err := req(actx)
		timedOut := actx.Err() == context.DeadlineExceeded && ctx.Err() == nil
		cancel()
		if err == nil {
			return nil
		}
		switch {
		case timedOut:
			err = fmt.Errorf("no answer within %v (registry.s3.timeout): %w", b.timeout, err)
		case ctx.Err() != nil:
			err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
		}
		if !idempotent || !retryable(err) || attempt >= b.retries || ctx.Err() != nil {
			if attempt > 0 {
				err = fmt.Errorf("after %d attempts: %w", attempt+1, err)
			}
			return fmt.Errorf("s3 %s %s at endpoint %s: %w", op, b.URI(key), b.endpoint, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("s3 %s %s at endpoint %s: %w", op, b.URI(key), b.endpoint, context.Cause(ctx))
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// retryable: anything but an answer of the server that a retry would repeat (4xx).
func retryable(err error) bool {
	if errors.Is(err, ErrNotFound) || errors.Is(err, ErrExists) || errors.Is(err, ErrNoStore) {
		return false
	}
	code := minio.ToErrorResponse(err).StatusCode
	return code == 0 || code >= 500
}

func (b *s3Backend) Create(ctx context.Context, key string, r io.Reader, size int64) error {
	// One PUT, not multipart: the condition must apply to the object as a whole.
	opts := minio.PutObjectOptions{DisableMultipart: true}
	opts.SetMatchETagExcept("*")
	return b.call(ctx, "create", key, false, func(ctx context.Context) error {
		_, err := b.client.PutObject(ctx, b.bucket, b.key(key), r, size, opts)
		switch minio.ToErrorResponse(err).StatusCode {
		case http.StatusPreconditionFailed, http.StatusConflict:
			return fmt.Errorf("%s: %w", b.URI(key), ErrExists)
		}
		return err
	})
}

func (b *s3Backend) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	seeker, rewind := r.(io.Seeker)
	return b.call(ctx, "put", key, rewind, func(ctx context.Context) error {
		if rewind {
			if _, err := seeker.Seek(0, io.SeekStart); err != nil {
				return err
			}
		}
		_, err := b.client.PutObject(ctx, b.bucket, b.key(key), r, size, minio.PutObjectOptions{DisableMultipart: true})
		return err
	})
}

// Get reads the whole object within one attempt, so that a connection closed mid-response is
// retried like any other failure and a caller never holds half an object.
func (b *s3Backend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	var data []byte
	err := b.call(ctx, "get", key, true, func(ctx context.Context) error {
		obj, err := b.client.GetObject(ctx, b.bucket, b.key(key), minio.GetObjectOptions{})
		if err != nil {
			return err
		}
		defer obj.Close()
		st, err := obj.Stat()
		if err != nil {
			if minio.ToErrorResponse(err).StatusCode == http.StatusNotFound {
				return fmt.Errorf("%s: %w", b.URI(key), ErrNotFound)
			}
			return err
		}
		buf := bytes.NewBuffer(make([]byte, 0, st.Size))
		if _, err := io.Copy(buf, obj); err != nil {
			return err
		}
		data = buf.Bytes()
		return nil
	})
	if errors.Is(err, ErrNotFound) {
		return nil, fmt.Errorf("%s: %w", b.URI(key), ErrNotFound)
	}
	if err != nil {
		return nil, err
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

func (b *s3Backend) Delete(ctx context.Context, key string) error {
	return b.call(ctx, "delete", key, true, func(ctx context.Context) error {
		return b.client.RemoveObject(ctx, b.bucket, b.key(key), minio.RemoveObjectOptions{})
	})
}

func (b *s3Backend) List(ctx context.Context, prefix string) ([]string, error) {
	full := b.key(prefix)
	var names []string
	err := b.call(ctx, "list", prefix, true, func(ctx context.Context) error {
		names = names[:0]
		for obj := range b.client.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: full}) {
			if obj.Err != nil {
				if minio.ToErrorResponse(obj.Err).Code == "NoSuchBucket" {
					return fmt.Errorf("store s3://%s does not exist: %w", b.bucket, ErrNoStore)
				}
				return obj.Err
			}
			names = append(names, strings.TrimPrefix(obj.Key, full))
		}
		return ctx.Err()
	})
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	return names, nil
}

func (b *s3Backend) URI(key string) string {
	return "s3://" + path.Join(b.bucket, b.key(key))
}
