// Package mlflow is a small client of the MLflow tracking server's REST API (2.x, /api/2.0):
// experiments, runs, batched params/metrics/tags, registered models, model versions, aliases
// and search. Every request has a deadline (the client's timeout); GETs and the POSTs that
// set a value are retried with exponential backoff on connection errors, timeouts and 5xx.
// Auth is a bearer token or basic auth; credentials never appear in errors or logs.
package mlflow

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/schedrl/schedrl/internal/config"
)

// Client talks to one MLflow tracking server.
type Client struct {
	base    string // http://host:port
	http    *http.Client
	token   string
	user    string
	pass    string
	retries int
	backoff time.Duration
	log     *slog.Logger
}

// New returns a client for cfg.URI. Credentials not in cfg come from MLFLOW_TRACKING_TOKEN or
// MLFLOW_TRACKING_USERNAME/MLFLOW_TRACKING_PASSWORD, as for MLflow's own clients.
func New(cfg config.TrackingConfig, log *slog.Logger) *Client {
	c := &Client{
		base: strings.TrimRight(cfg.URI, "/"), http: &http.Client{Timeout: cfg.Timeout},
		token: cfg.Token, user: cfg.Username, pass: cfg.Password,
		retries: cfg.Retries, backoff: cfg.Backoff, log: log,
	}
	if c.token == "" {
		c.token = os.Getenv("MLFLOW_TRACKING_TOKEN")
	}
	if c.user == "" && c.pass == "" {
		c.user, c.pass = os.Getenv("MLFLOW_TRACKING_USERNAME"), os.Getenv("MLFLOW_TRACKING_PASSWORD")
	}
	return c
}

// URI is the server's base URI.
func (c *Client) URI() string { return c.base }

// APIError is an error answer of the server.
type APIError struct {
	Status  int
	Code    string // e.g. RESOURCE_ALREADY_EXISTS, RESOURCE_DOES_NOT_EXIST
	Message string
	Path    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("mlflow %s: %d %s: %s", e.Path, e.Status, e.Code, e.Message)
}

// IsCode reports whether err is an APIError with the given error_code.
func IsCode(err error, code string) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Code == code
}

// call sends one request; in (POST body or GET query) and out are JSON structs.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("mlflow %s: encode request: %w", path, err)
		}
	}
	target := c.base + "/api/2.0/mlflow/" + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	status, data, err := c.send(ctx, method, target, path, body, idempotent(method, path))
	if err != nil {
		return err
	}
	return decodeAnswer(path, status, data, out)
}

// send makes the request, retrying it when again is set; errors name the method, the API
// path and the server.
func (c *Client) send(ctx context.Context, method, target, path string, body []byte, again bool) (int, []byte, error) {
	wait := c.backoff
	for attempt := 0; ; attempt++ {
		status, data, err := c.do(ctx, method, target, body)
		retry := again && (err != nil || status >= 500)
		if !retry || attempt >= c.retries || ctx.Err() != nil {
			if err != nil {
				if ctx.Err() != nil {
					err = fmt.Errorf("%w: %w", context.Cause(ctx), err)
				}
				if attempt > 0 {
					err = fmt.Errorf("after %d attempts: %w", attempt+1, err)
				}
				return 0, nil, fmt.Errorf("mlflow %s %s at %s: %w", method, path, c.base, err)
			}
			return status, data, nil
		}
		c.log.Debug("mlflow request failed; retrying", "path", path, "status", status, "err", err, "in", wait)
		select {
		case <-ctx.Done():
			return 0, nil, fmt.Errorf("mlflow %s %s at %s: %w", method, path, c.base, context.Cause(ctx))
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// ProxiedArtifacts reports whether a run's artifact URI is served by the tracking server
// itself (mlflow-artifacts:/...), so that UploadArtifact can write there.
func ProxiedArtifacts(artifactURI string) bool {
	return strings.HasPrefix(artifactURI, proxyScheme)
}

const proxyScheme = "mlflow-artifacts:/"

// UploadArtifact stores data as artifactURI/path through the server's artifact proxy; the
// same bytes to the same path change nothing, so it is retried like a GET.
func (c *Client) UploadArtifact(ctx context.Context, artifactURI, path string, data []byte) error {
	if !ProxiedArtifacts(artifactURI) {
		return fmt.Errorf("mlflow artifacts %s: not served by %s (start mlflow server with --serve-artifacts)", artifactURI, c.base)
	}
	rel := strings.Trim(strings.TrimPrefix(artifactURI, proxyScheme), "/") + "/" + path
	api := "mlflow-artifacts/artifacts/" + rel
	status, answer, err := c.send(ctx, http.MethodPut, c.base+"/api/2.0/"+(&url.URL{Path: api}).EscapedPath(), api, data, true)
	if err != nil {
		return err
	}
	return decodeAnswer(api, status, answer, nil)
}

// idempotentPOST are the POSTs that set a value, so that repeating one changes nothing; the
// others (create a run or version, log metrics) are sent once.
var idempotentPOST = map[string]bool{"runs/update": true, "registered-models/alias": true}

func idempotent(method, path string) bool {
	return method == http.MethodGet || idempotentPOST[path]
}

func (c *Client) do(ctx context.Context, method, target string, body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	switch {
	case c.token != "":
		req.Header.Set("Authorization", "Bearer "+c.token)
	case c.user != "" || c.pass != "":
		req.SetBasicAuth(c.user, c.pass)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return 0, nil, fmt.Errorf("no answer within %v (registry.tracking.timeout): %w", c.http.Timeout, err)
		}
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, data, err
}

func decodeAnswer(path string, status int, data []byte, out any) error {
	if status/100 != 2 {
		ae := &APIError{Status: status, Path: path}
		var answer struct {
			Code    string `json:"error_code"`
			Message string `json:"message"`
		}
		if json.Unmarshal(data, &answer) == nil && answer.Code != "" {
			ae.Code, ae.Message = answer.Code, answer.Message
		} else {
			ae.Message = strings.TrimSpace(string(data[:min(len(data), 200)]))
		}
		return ae
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("mlflow %s: decode answer: %w", path, err)
	}
	return nil
}
