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
	"sync/atomic"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/schedrl/schedrl/internal/config"
)

// s3Backend stores objects in an S3 bucket (MinIO in the tests) under a key prefix. Create
// uses a conditional PUT (If-None-Match: *), so two writers of one key cannot both succeed.
// Every request has a stall deadline (cfg.Timeout): connecting, the first answer and each gap
// between the bytes of a transfer must each take less, so an endpoint that accepts connections
// and never answers fails a command in seconds, while a long transfer may take as long as its
// bytes keep moving. The idempotent requests (get, list, put, delete) are retried with
// exponential backoff on a refused connection or a 5xx answer, not on a stall (a silent
// endpoint stays silent); a conditional create never is: one that failed may have happened.
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
	// The watch of each request bounds the wait for an answer and the gaps of a transfer;
	// this is a backstop behind it.
	transport.ResponseHeaderTimeout = 2 * cfg.Timeout
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

// call runs one request under the stall deadline, retrying an idempotent one on a connection
// error or a 5xx answer. req reports each piece of progress (bytes sent or received, an object
// listed) through its argument. Errors name the operation, the object and the endpoint.
func (b *s3Backend) call(ctx context.Context, op, key string, idempotent bool, req func(ctx context.Context, progress func()) error) error {
	wait := b.backoff
	for attempt := 0; ; attempt++ {
		actx, progress, stop := b.watch(ctx)
		err := req(actx, progress)
		stalled := stop()
		if err == nil {
			return nil
		}
		switch {
		case stalled:
			err = fmt.Errorf("no progress within %v (registry.s3.timeout; not retried: a silent endpoint stays silent): %w", b.timeout, errStalled)
		case ctx.Err() != nil:
			err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
		}
		if !idempotent || stalled || !retryable(err) || attempt >= b.retries || ctx.Err() != nil {
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

var errStalled = errors.New("request stalled")

// watch returns a context that is cancelled when progress has not been called for b.timeout,
// the progress function, and stop, which ends the watch and says whether it cancelled.
func (b *s3Backend) watch(ctx context.Context) (context.Context, func(), func() bool) {
	wctx, cancel := context.WithCancelCause(ctx)
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(max(b.timeout/8, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-tick.C:
				if now.Sub(time.Unix(0, last.Load())) >= b.timeout {
					cancel(errStalled)
					return
				}
			}
		}
	}()
	progress := func() { last.Store(time.Now().UnixNano()) }
	stop := func() bool {
		close(done)
		stalled := errors.Is(context.Cause(wctx), errStalled)
		cancel(nil)
		return stalled
	}
	return wctx, progress, stop
}

// progressReader calls progress on every read that moved bytes.
type progressReader struct {
	r        io.Reader
	progress func()
}

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.progress()
	}
	return n, err
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
	return b.call(ctx, "create", key, false, func(ctx context.Context, progress func()) error {
		_, err := b.client.PutObject(ctx, b.bucket, b.key(key), progressReader{r, progress}, size, opts)
		switch minio.ToErrorResponse(err).StatusCode {
		case http.StatusPreconditionFailed, http.StatusConflict:
			return fmt.Errorf("%s: %w", b.URI(key), ErrExists)
		}
		return err
	})
}

func (b *s3Backend) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	seeker, rewind := r.(io.Seeker)
	return b.call(ctx, "put", key, rewind, func(ctx context.Context, progress func()) error {
		if rewind {
			if _, err := seeker.Seek(0, io.SeekStart); err != nil {
				return err
			}
		}
		_, err := b.client.PutObject(ctx, b.bucket, b.key(key), progressReader{r, progress}, size, minio.PutObjectOptions{DisableMultipart: true})
		return err
	})
}

// Get reads the whole object within one attempt, so that a connection closed mid-response is
// retried like any other failure and a caller never holds half an object.
func (b *s3Backend) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	var data []byte
	err := b.call(ctx, "get", key, true, func(ctx context.Context, progress func()) error {
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
		progress()
		// Small reads, each a piece of progress: an Object fills a whole read before it
		// returns, and bytes.Buffer would ask for the whole object in one.
		if _, err := io.CopyBuffer(struct{ io.Writer }{buf}, progressReader{obj, progress}, make([]byte, 32<<10)); err != nil {
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
	return b.call(ctx, "delete", key, true, func(ctx context.Context, _ func()) error {
		return b.client.RemoveObject(ctx, b.bucket, b.key(key), minio.RemoveObjectOptions{})
	})
}

func (b *s3Backend) List(ctx context.Context, prefix string) ([]string, error) {
	full := b.key(prefix)
	var names []string
	err := b.call(ctx, "list", prefix, true, func(ctx context.Context, progress func()) error {
		names = names[:0]
		for obj := range b.client.ListObjects(ctx, b.bucket, minio.ListObjectsOptions{Prefix: full}) {
			if obj.Err != nil {
				if minio.ToErrorResponse(obj.Err).Code == "NoSuchBucket" {
					return fmt.Errorf("store s3://%s does not exist: %w", b.bucket, ErrNoStore)
				}
				return obj.Err
			}
			progress()
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
