package config

import (
	"fmt"
	"net/url"
	"strings"
	"time"
)

// RegistryConfig configures the object store and the MLflow mirror. Secrets (keys, tokens,
// passwords) come from this file or SCHEDRL_REGISTRY_* / the usual AWS_* and MLFLOW_TRACKING_*
// environment variables, never from flags, and Show prints them as "***".
type RegistryConfig struct {
	// Store is file://DIR (no server needed) or s3://BUCKET[/PREFIX].
	Store    string         `mapstructure:"store" yaml:"store"`
	S3       S3Config       `mapstructure:"s3" yaml:"s3"`
	Tracking TrackingConfig `mapstructure:"tracking" yaml:"tracking"`
	// Deadline bounds a whole registry command (all its requests and retries together).
	Deadline time.Duration `mapstructure:"deadline" yaml:"deadline"`
}

// S3Config is the S3/MinIO endpoint of an s3:// store.
type S3Config struct {
	Endpoint string `mapstructure:"endpoint" yaml:"endpoint"` // host:port, e.g. 127.0.0.1:9000
	Region   string `mapstructure:"region" yaml:"region"`
	TLS      bool   `mapstructure:"tls" yaml:"tls"`
	// AccessKey and SecretKey, when empty, come from AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY
	// or MINIO_ROOT_USER/MINIO_ROOT_PASSWORD.
	AccessKey string `mapstructure:"access_key" yaml:"access_key" secret:"true"`
	SecretKey string `mapstructure:"secret_key" yaml:"secret_key" secret:"true"`
	// Timeout is the stall deadline of each request: connecting, the first answer and each
	// gap between the bytes of a transfer must take less (a long transfer takes as long as its
	// bytes keep moving). Retries is how many times an idempotent one (get, list, put, delete)
	// is retried on a refused connection or a 5xx, with exponential backoff from Backoff; a
	// stalled request and a conditional create never are.
	Timeout time.Duration `mapstructure:"timeout" yaml:"timeout"`
	Retries int           `mapstructure:"retries" yaml:"retries"`
	Backoff time.Duration `mapstructure:"backoff" yaml:"backoff"`
}

// TrackingConfig is the MLflow tracking server the registry mirrors to; empty URI: no mirror.
type TrackingConfig struct {
	URI string `mapstructure:"uri" yaml:"uri"` // http(s)://host:port of the MLflow server
	// Experiment prefixes the per-model MLflow experiment name: "<experiment>/<model>".
	Experiment string `mapstructure:"experiment" yaml:"experiment"`
	// Token (bearer) or Username+Password (basic auth); when empty, MLFLOW_TRACKING_TOKEN or
	// MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD.
	Token    string `mapstructure:"token" yaml:"token" secret:"true"`
	Username string `mapstructure:"username" yaml:"username"`
	Password string `mapstructure:"password" yaml:"password" secret:"true"`
	// Retries is how many times an idempotent request (a GET, or a POST that sets a value) is
	// retried on a connection error, a timeout or a 5xx, with exponential backoff from Backoff.
	Retries int           `mapstructure:"retries" yaml:"retries"`
	Backoff time.Duration `mapstructure:"backoff" yaml:"backoff"`
	Timeout time.Duration `mapstructure:"timeout" yaml:"timeout"` // per request
}

// SetDefaults: a local folder store and no MLflow mirror.
func (c *RegistryConfig) SetDefaults() {
	c.Store = "file://artifacts/registry"
	c.S3.Region = "us-east-1"
	c.S3.Timeout = 10 * time.Second
	c.S3.Retries = 3
	c.S3.Backoff = 200 * time.Millisecond
	c.Deadline = 30 * time.Minute
	c.Tracking.Experiment = "schedrl"
	c.Tracking.Retries = 4
	c.Tracking.Backoff = 200 * time.Millisecond
	c.Tracking.Timeout = 30 * time.Second
}

// Validate checks the shape of the store URL and the tracking settings.
func (c RegistryConfig) Validate() error {
	u, err := url.Parse(c.Store)
	switch {
	case err != nil:
		return fmt.Errorf("store: %v", err)
	case u.User != nil:
		return fmt.Errorf("store: credentials do not belong in the URL; use s3.access_key/s3.secret_key or AWS_* env")
	case u.Scheme == "file":
		if u.Host+u.Path == "" {
			return fmt.Errorf("store: %q names no directory", c.Store)
		}
	case u.Scheme == "s3":
		if u.Host == "" {
			return fmt.Errorf("store: %q names no bucket", c.Store)
		}
		if c.S3.Endpoint == "" {
			return fmt.Errorf("s3.endpoint: required for an s3:// store")
		}
		if strings.Contains(c.S3.Endpoint, "/") {
			return fmt.Errorf("s3.endpoint: want host:port, got %q", c.S3.Endpoint)
		}
	default:
		return fmt.Errorf("store: want file://DIR or s3://BUCKET/PREFIX, got %q", c.Store)
	}
	switch {
	case c.S3.Timeout <= 0:
		return fmt.Errorf("s3.timeout: must be > 0, got %v", c.S3.Timeout)
	case c.S3.Retries < 0:
		return fmt.Errorf("s3.retries: must be >= 0, got %d", c.S3.Retries)
	case c.S3.Backoff <= 0:
		return fmt.Errorf("s3.backoff: must be > 0, got %v", c.S3.Backoff)
	case c.Deadline <= 0:
		return fmt.Errorf("deadline: must be > 0, got %v", c.Deadline)
	}
	t := c.Tracking
	if t.URI != "" {
		if tu, err := url.Parse(t.URI); err != nil || (tu.Scheme != "http" && tu.Scheme != "https") || tu.Host == "" {
			return fmt.Errorf("tracking.uri: want http(s)://host:port, got %q", t.URI)
		}
	}
	switch {
	case t.Experiment == "":
		return fmt.Errorf("tracking.experiment: empty")
	case t.Retries < 0:
		return fmt.Errorf("tracking.retries: must be >= 0, got %d", t.Retries)
	case t.Backoff <= 0:
		return fmt.Errorf("tracking.backoff: must be > 0, got %v", t.Backoff)
	case t.Timeout <= 0:
		return fmt.Errorf("tracking.timeout: must be > 0, got %v", t.Timeout)
	}
	return nil
}

// Endpoints names the services `schedrl doctor` checks: the S3 endpoint of an s3:// store and
// the MLflow server, when configured. A file:// store is no service.
func (c RegistryConfig) Endpoints() []Endpoint {
	var out []Endpoint
	if strings.HasPrefix(c.Store, "s3://") && c.S3.Endpoint != "" {
		scheme := "http://"
		if c.S3.TLS {
			scheme = "https://"
		}
		out = append(out, Endpoint{Name: "registry.s3.endpoint", URL: scheme + c.S3.Endpoint})
	}
	if c.Tracking.URI != "" {
		out = append(out, Endpoint{Name: "registry.tracking.uri", URL: c.Tracking.URI})
	}
	return out
}
