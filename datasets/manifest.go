package datasets

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/schedrl/schedrl/internal/digest"
	"github.com/schedrl/schedrl/internal/manifestkind"
)

// ManifestFile is the name of the manifest inside a dataset directory.
const ManifestFile = "manifest.json"

// Manifest describes a dataset completely: what made it and a checksum of every file in it.
type Manifest struct {
	SchemaVersion string                `json:"schema_version"`
	FeatureSpec   string                `json:"feature_spec"`
	Env           string                `json:"env"`
	EnvOptions    json.RawMessage       `json:"env_options"`
	ValFraction   float64               `json:"val_fraction"`
	SplitSeed     uint64                `json:"split_seed"`
	Gamma         float64               `json:"gamma"` // discount of return_to_go
	Rows          int64                 `json:"rows"`
	Splits        map[string]*SplitInfo `json:"splits"`
	Episodes      []EpisodeInfo         `json:"episodes"`
	Contexts      []FileInfo            `json:"contexts"` // environment start states, one per distinct context
	Logs          []FileInfo            `json:"logs"`     // the source decision logs
	Reward        Stats                 `json:"reward"`
	Return        Stats                 `json:"episode_return"`
}

// SplitInfo is one split (train or val).
type SplitInfo struct {
	Rows     int64       `json:"rows"`
	Episodes int         `json:"episodes"`
	Shards   []ShardInfo `json:"shards"`
}

// ShardInfo is one Parquet file; Path is relative to the dataset directory.
type ShardInfo struct {
	Path   string `json:"path"`
	Rows   int64  `json:"rows"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// FileInfo names a file by path and checksum.
type FileInfo struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// EpisodeInfo is one replayed log: its rows sit, in step order, in Segments.
type EpisodeInfo struct {
	ID       int32     `json:"id"`
	Name     string    `json:"name"`
	Log      string    `json:"log"`
	Split    string    `json:"split"`
	Rows     int64     `json:"rows"`
	Failed   int64     `json:"failed"` // tasks the log records as unplaceable (no decision, no row)
	Return   float64   `json:"return"`
	Context  string    `json:"context"` // path of its context file
	Segments []Segment `json:"segments"`
}

// Segment is a run of consecutive rows of one episode inside one shard.
type Segment struct {
	Shard    string `json:"shard"`
	FirstRow int64  `json:"first_row"`
	Rows     int64  `json:"rows"`
}

// Stats summarises a series of values.
type Stats struct {
	Count int64   `json:"count"`
	Min   float64 `json:"min"`
	Max   float64 `json:"max"`
	Mean  float64 `json:"mean"`
	Std   float64 `json:"std"`
}

// statsAcc accumulates Stats with Welford's update, so long series stay accurate.
type statsAcc struct {
	n        int64
	mean, m2 float64
	min, max float64
}

func (a *statsAcc) add(v float64) {
	if a.n == 0 || v < a.min {
		a.min = v
	}
	if a.n == 0 || v > a.max {
		a.max = v
	}
	a.n++
	d := v - a.mean
	a.mean += d / float64(a.n)
	a.m2 += d * (v - a.mean)
}

func (a *statsAcc) stats() Stats {
	s := Stats{Count: a.n, Min: a.min, Max: a.max, Mean: a.mean}
	if a.n > 1 {
		s.Std = math.Sqrt(a.m2 / float64(a.n-1))
	}
	return s
}

// ReadManifest loads DIR/manifest.json and checks its schema version.
func ReadManifest(dir string) (*Manifest, error) {
	if err := manifestkind.Expect(dir, manifestkind.Dataset); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, ManifestFile)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if m.SchemaVersion != SchemaVersion {
		return nil, fmt.Errorf("%s: schema_version %q, this build reads %q", path, m.SchemaVersion, SchemaVersion)
	}
	return &m, nil
}

// Verify checks that every shard and context file in the manifest exists with the recorded
// size and checksum, so a changed or truncated file is an error rather than silent garbage.
func (m *Manifest) Verify(dir string) error {
	var files []FileInfo
	for _, name := range []string{SplitTrain, SplitVal} {
		if s := m.Splits[name]; s != nil {
			for _, sh := range s.Shards {
				files = append(files, FileInfo{Path: sh.Path, Bytes: sh.Bytes, SHA256: sh.SHA256})
			}
		}
	}
	files = append(files, m.Contexts...)
	for _, f := range files {
		sum, n, err := digest.File(filepath.Join(dir, filepath.FromSlash(f.Path)))
		if err != nil {
			return fmt.Errorf("dataset %s: %w", dir, err)
		}
		if n != f.Bytes {
			return fmt.Errorf("dataset %s: %s has %d bytes, manifest says %d (truncated or changed)", dir, f.Path, n, f.Bytes)
		}
		if sum != f.SHA256 {
			return fmt.Errorf("dataset %s: %s sha256 %s does not match the manifest's %s", dir, f.Path, sum, f.SHA256)
		}
	}
	return nil
}
