// Package digest hashes files the one way schedrl records them: lower-case hex sha256 plus
// the byte count, for checkpoint manifests, dataset manifests and pipeline stage records; and
// content digests, which leave wall-clock measurements out, for checkpoint identity
// (Manifest.Digest) and pipeline stage keys.
package digest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
)

// File returns the hex sha256 and size of the file at path.
func File(path string) (sum string, size int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// WallClock are the JSON fields that record when or how fast something ran, not what it
// computed: a checkpoint's creation time, training and eval wall times, throughputs and
// decision latencies. Every file keeps them; content digests leave them out, so the same
// inputs, code and seeds give the same digest however busy the machine was.
var WallClock = []string{
	"created",                 // checkpoint manifests
	"seconds",                 // pretrain epochs and resume state, finetune resume state
	"wall_seconds",            // eval runs
	"env_steps_per_s",         // finetune metrics.jsonl
	"rollout_env_steps_per_s", // finetune metrics.jsonl
	"decision_latency_p50_us", // eval metrics.json
	"decision_latency_p99_us", // eval metrics.json
	"plan_latency_seconds",    // eval metrics.json (defrag)
}

// Rendered reports whether the file at the slash-separated path rel only presents other
// files' values for people (the eval report, which prints wall time and latencies): content
// digests leave it out, since the files it renders are covered.
func Rendered(rel string) bool {
	base := path.Base(rel)
	return base == "report.md" || base == "report.html"
}

// Content returns the content digest of the file at path, the slash-separated rel inside the
// output that holds it: "" for a Rendered file; for .json and .jsonl files the sha256 of
// their canonical encoding (sorted keys, numbers as written) without the WallClock fields;
// for any other file, and for JSON that does not parse, the sha256 of its bytes.
func Content(path, rel string) (string, error) {
	if Rendered(rel) {
		return "", nil
	}
	ext := filepath.Ext(rel)
	if ext != ".json" && ext != ".jsonl" {
		sum, _, err := File(path)
		return sum, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return JSON(data), nil
}

// JSON returns the content digest of a JSON document or of JSON lines: the sha256 of each
// value's canonical encoding without the WallClock fields, one per line. Data that does not
// parse as JSON is digested as it is.
func JSON(data []byte) string {
	h := sha256.New()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			sum := sha256.Sum256(data)
			return hex.EncodeToString(sum[:])
		}
		b, err := json.Marshal(dropWallClock(v))
		if err != nil {
			sum := sha256.Sum256(data)
			return hex.EncodeToString(sum[:])
		}
		h.Write(append(b, '\n'))
	}
	return hex.EncodeToString(h.Sum(nil))
}

func dropWallClock(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range WallClock {
			delete(v, k)
		}
		for k, x := range v {
			v[k] = dropWallClock(x)
		}
	case []any:
		for i, x := range v {
			v[i] = dropWallClock(x)
		}
	}
	return v
}
