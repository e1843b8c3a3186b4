package testserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// MinIO is a running MinIO server.
type MinIO struct {
	Endpoint  string // 127.0.0.1:PORT
	AccessKey string
	SecretKey string
	Dir       string // data and log folder, removed by Close
	proc      *process
}

// StartMinIO starts a MinIO server with fresh random credentials in a new temporary folder.
func StartMinIO() (*MinIO, error) { return StartMinIOOn("127.0.0.1") }

// StartMinIOOn is StartMinIO listening on host, such as a Node's HostIP, which its pods reach.
func StartMinIOOn(host string) (*MinIO, error) {
	bin, err := tool("bin/minio", "20-minio.sh")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "schedrl-minio-")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	console, err := FreePort()
	if err != nil {
		return nil, err
	}
	m := &MinIO{
		Endpoint: net.JoinHostPort(host, strconv.Itoa(port)), AccessKey: randomKey("ak"), SecretKey: randomKey("sk"), Dir: dir,
	}
	m.proc = &process{
		name: "minio",
		argv: []string{bin, "server", filepath.Join(dir, "data"), "--quiet", "--address", m.Endpoint,
			"--console-address", "127.0.0.1:" + strconv.Itoa(console)},
		env: []string{"MINIO_ROOT_USER=" + m.AccessKey, "MINIO_ROOT_PASSWORD=" + m.SecretKey,
			"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CI_CD=1"},
		log: filepath.Join(dir, "minio.log"),
	}
	if err := m.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return m, nil
}

// Start (re)starts the server on its port and data, waiting until it is healthy.
func (m *MinIO) Start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	waitPortFree(ctx, m.Endpoint)
	if err := m.proc.start(); err != nil {
		return err
	}
	if err := m.proc.waitHTTP("http://"+m.Endpoint+"/minio/health/live", 60*time.Second); err != nil {
		return err
	}
	return m.waitS3(60 * time.Second)
}

// waitS3 waits until the S3 API answers: under load a restarted MinIO is live before its
// object layer has loaded the buckets it keeps on disk.
func (m *MinIO) waitS3(limit time.Duration) error {
	c, err := m.Client()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(limit)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := c.ListBuckets(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("testserver: minio at %s live but its S3 API does not answer after %s: %w", m.Endpoint, limit, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop stops the server; Start brings it back with its data.
func (m *MinIO) Stop() { m.proc.stop() }

// Close stops the server and removes its folder.
func (m *MinIO) Close() {
	m.Stop()
	os.RemoveAll(m.Dir)
}

// Client returns a minio-go client with the root credentials.
func (m *MinIO) Client() (*minio.Client, error) {
	return minio.New(m.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(m.AccessKey, m.SecretKey, "")})
}

// MakeBucket creates a bucket.
func (m *MinIO) MakeBucket(name string) error {
	c, err := m.Client()
	if err != nil {
		return err
	}
	if err := c.MakeBucket(context.Background(), name, minio.MakeBucketOptions{}); err != nil {
		return fmt.Errorf("testserver: make bucket %s: %w", name, err)
	}
	return nil
}

// MLflow is a running MLflow tracking server with a SQLite backend and artifacts in MinIO.
type MLflow struct {
	URI  string // http://127.0.0.1:PORT
	Dir  string
	proc *process
}

// StartMLflow starts `mlflow server` from the setup's virtualenv as its own artifact proxy
// (run artifact URIs are mlflow-artifacts:/..., uploads and downloads go through the server)
// storing into s3://BUCKET/mlflow in minio (the bucket is created).
func StartMLflow(minio *MinIO, bucket string) (*MLflow, error) {
	bin, err := tool("venv-mlflow/bin/mlflow", "30-mlflow.sh")
	if err != nil {
		return nil, err
	}
	if err := minio.MakeBucket(bucket); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "schedrl-mlflow-")
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	f := &MLflow{URI: "http://127.0.0.1:" + strconv.Itoa(port), Dir: dir}
	f.proc = &process{
		name: "mlflow",
		argv: []string{bin, "server", "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--workers", "1",
			"--backend-store-uri", "sqlite:///" + filepath.Join(dir, "mlflow.db"),
			"--serve-artifacts", "--artifacts-destination", "s3://" + bucket + "/mlflow"},
		env: []string{"MLFLOW_S3_ENDPOINT_URL=http://" + minio.Endpoint,
			"AWS_ACCESS_KEY_ID=" + minio.AccessKey, "AWS_SECRET_ACCESS_KEY=" + minio.SecretKey},
		log: filepath.Join(dir, "mlflow.log"),
	}
	if err := f.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return f, nil
}

// Start (re)starts the server on its port and database, waiting until /health answers.
func (f *MLflow) Start() error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	waitPortFree(ctx, f.URI[len("http://"):])
	if err := f.proc.start(); err != nil {
		return err
	}
	return f.proc.waitHTTP(f.URI+"/health", 120*time.Second)
}

// Stop stops the server; Start brings it back with its database.
func (f *MLflow) Stop() { f.proc.stop() }

// Close stops the server and removes its folder.
func (f *MLflow) Close() {
	f.Stop()
	os.RemoveAll(f.Dir)
}
