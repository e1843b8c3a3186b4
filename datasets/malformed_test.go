package datasets

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/digest"
)

// A shard whose bytes are not Parquet, or are Parquet broken inside, with the manifest's size
// and sha256 forged to match: inspect and the training reader both fail with an error naming
// the shard, never a panic (issue 34, class 3).
func TestMalformedShardWithMatchingChecksum(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(data []byte) []byte
	}{
		{"not parquet", func([]byte) []byte { return []byte("PAR1 this is not a parquet file PAR1") }},
		{"garbage pages", func(data []byte) []byte {
			for i := 4; i < len(data)/2; i++ {
				data[i] = byte(i * 7)
			}
			return data
		}},
		{"garbage footer", func(data []byte) []byte {
			for i := len(data) - 200; i < len(data)-8; i++ {
				data[i] = byte(i * 13)
			}
			return data
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := smallDataset(t)
			m, err := ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			sh := &m.Splits[SplitTrain].Shards[0]
			path := filepath.Join(dir, filepath.FromSlash(sh.Path))
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, tc.damage(data), 0o644); err != nil {
				t.Fatal(err)
			}
			if sh.SHA256, sh.Bytes, err = digest.File(path); err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, ManifestFile), raw, 0o644); err != nil {
				t.Fatal(err)
			}
			check := func(what string, run func() error) {
				t.Helper()
				var err error
				func() {
					defer func() {
						if r := recover(); r != nil {
							t.Errorf("%s panicked: %v", what, r)
						}
					}()
					err = run()
				}()
				if err == nil || !strings.Contains(err.Error(), filepath.Base(sh.Path)) {
					t.Errorf("%s: error %v, want one naming %s", what, err, sh.Path)
				}
			}
			check("Inspect", func() error { _, err := Inspect(dir); return err })
			check("ReadEpisode", func() error {
				d, err := Open(dir)
				if err != nil {
					return err
				}
				for _, ep := range d.Episodes(SplitTrain) {
					if err := d.ReadEpisode(ep, func(*Sample) error { return nil }); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
}
