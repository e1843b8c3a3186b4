package mlflow

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Tag, Param and Metric are MLflow's key/value records.
type (
	Tag struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	Param  = Tag
	Metric struct {
		Key       string  `json:"key"`
		Value     float64 `json:"value"`
		Timestamp int64   `json:"timestamp"` // ms since the epoch
		Step      int64   `json:"step"`
	}
)

// Run is the part of a run the registry reads back.
type Run struct {
	Info struct {
		RunID        string `json:"run_id"`
		ExperimentID string `json:"experiment_id"`
		RunName      string `json:"run_name"`
		Status       string `json:"status"`
		ArtifactURI  string `json:"artifact_uri"`
	} `json:"info"`
	Data struct {
		Metrics []Metric `json:"metrics"`
		Params  []Param  `json:"params"`
		Tags    []Tag    `json:"tags"`
	} `json:"data"`
}

// ModelVersion is a registered model version.
type ModelVersion struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Source  string   `json:"source"`
	RunID   string   `json:"run_id"`
	Status  string   `json:"status"`
	Tags    []Tag    `json:"tags"`
	Aliases []string `json:"aliases"`
}

// TagValue returns the value of tag key, or "".
func (mv ModelVersion) TagValue(key string) string {
	for _, t := range mv.Tags {
		if t.Key == key {
			return t.Value
		}
	}
	return ""
}

// Millis converts t to MLflow's timestamps.
func Millis(t time.Time) int64 { return t.UnixMilli() }

// EnsureExperiment returns the id of the experiment called name, creating it if needed.
func (c *Client) EnsureExperiment(ctx context.Context, name string) (string, error) {
	var got struct {
		Experiment struct {
			ID string `json:"experiment_id"`
		} `json:"experiment"`
	}
	err := c.call(ctx, http.MethodGet, "experiments/get-by-name", url.Values{"experiment_name": {name}}, nil, &got)
	if err == nil {
		return got.Experiment.ID, nil
	}
	if !IsCode(err, "RESOURCE_DOES_NOT_EXIST") {
		return "", err
	}
	var created struct {
		ID string `json:"experiment_id"`
	}
	err = c.call(ctx, http.MethodPost, "experiments/create", nil, map[string]any{"name": name}, &created)
	if IsCode(err, "RESOURCE_ALREADY_EXISTS") {
		return c.EnsureExperiment(ctx, name) // created concurrently
	}
	return created.ID, err
}

// CreateRun starts a run in experiment expID.
func (c *Client) CreateRun(ctx context.Context, expID, name string, start time.Time, tags []Tag) (Run, error) {
	var got struct{ Run Run }
	err := c.call(ctx, http.MethodPost, "runs/create", nil, map[string]any{
		"experiment_id": expID, "run_name": name, "start_time": Millis(start), "tags": nonNil(tags),
	}, &got)
	return got.Run, err
}

// LogBatch records metrics, params and tags of a run, in chunks within the server's limits.
func (c *Client) LogBatch(ctx context.Context, runID string, metrics []Metric, params []Param, tags []Tag) error {
	const maxMetrics, maxParams, maxTags = 1000, 100, 100
	for len(metrics) > 0 || len(params) > 0 || len(tags) > 0 {
		m, p, t := min(len(metrics), maxMetrics), min(len(params), maxParams), min(len(tags), maxTags)
		err := c.call(ctx, http.MethodPost, "runs/log-batch", nil, struct {
			RunID   string   `json:"run_id"`
			Metrics []Metric `json:"metrics"`
			Params  []Param  `json:"params"`
			Tags    []Tag    `json:"tags"`
		}{runID, nonNil(metrics[:m]), nonNil(params[:p]), nonNil(tags[:t])}, nil)
		if err != nil {
			return err
		}
		metrics, params, tags = metrics[m:], params[p:], tags[t:]
	}
	return nil
}

// FinishRun marks a run FINISHED at end.
func (c *Client) FinishRun(ctx context.Context, runID string, end time.Time) error {
	return c.call(ctx, http.MethodPost, "runs/update", nil, map[string]any{
		"run_id": runID, "status": "FINISHED", "end_time": Millis(end),
	}, nil)
}

// GetRun reads a run with its metrics, params and tags.
func (c *Client) GetRun(ctx context.Context, runID string) (Run, error) {
	var got struct{ Run Run }
	err := c.call(ctx, http.MethodGet, "runs/get", url.Values{"run_id": {runID}}, nil, &got)
	return got.Run, err
}

// EnsureRegisteredModel creates the registered model name unless it exists.
func (c *Client) EnsureRegisteredModel(ctx context.Context, name string) error {
	err := c.call(ctx, http.MethodPost, "registered-models/create", nil, map[string]any{"name": name}, nil)
	if IsCode(err, "RESOURCE_ALREADY_EXISTS") {
		return nil
	}
	return err
}

// CreateModelVersion registers a version of model name whose files are at source.
func (c *Client) CreateModelVersion(ctx context.Context, name, source, runID string, tags []Tag) (ModelVersion, error) {
	var got struct {
		ModelVersion ModelVersion `json:"model_version"`
	}
	err := c.call(ctx, http.MethodPost, "model-versions/create", nil, map[string]any{
		"name": name, "source": source, "run_id": runID, "tags": nonNil(tags),
	}, &got)
	return got.ModelVersion, err
}

// SearchModelVersions returns every model version matching filter (e.g. "name='m'").
func (c *Client) SearchModelVersions(ctx context.Context, filter string) ([]ModelVersion, error) {
	var all []ModelVersion
	token := ""
	for {
		q := url.Values{"filter": {filter}, "max_results": {"1000"}}
		if token != "" {
			q.Set("page_token", token)
		}
		var got struct {
			ModelVersions []ModelVersion `json:"model_versions"`
			NextPageToken string         `json:"next_page_token"`
		}
		if err := c.call(ctx, http.MethodGet, "model-versions/search", q, nil, &got); err != nil {
			return nil, err
		}
		all = append(all, got.ModelVersions...)
		if token = got.NextPageToken; token == "" {
			return all, nil
		}
	}
}

// SetAlias points alias of registered model name at version.
func (c *Client) SetAlias(ctx context.Context, name, alias, version string) error {
	return c.call(ctx, http.MethodPost, "registered-models/alias", nil, map[string]any{
		"name": name, "alias": alias, "version": version,
	}, nil)
}

// ByAlias returns the model version alias points at.
func (c *Client) ByAlias(ctx context.Context, name, alias string) (ModelVersion, error) {
	var got struct {
		ModelVersion ModelVersion `json:"model_version"`
	}
	err := c.call(ctx, http.MethodGet, "registered-models/alias", url.Values{"name": {name}, "alias": {alias}}, nil, &got)
	return got.ModelVersion, err
}

// nonNil makes a nil list encode as [], which the server requires (null is a 500).
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
