package datasets

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// smallDataset builds a dataset of three short expert episodes once per test.
func smallDataset(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for seed := uint64(1); seed <= 3; seed++ {
		writeFile(t, filepath.Join(dir, fmt.Sprintf("s%d.jsonl", seed)), makeRun(t, 60, 1.3, seed).log)
	}
	out := filepath.Join(dir, "ds")
	o := testOptions(filepath.Join(dir, "*.jsonl"), out)
	o.ShardRows = 200 // episodes span several shards
	if _, _, err := Build(o); err != nil {
		t.Fatal(err)
	}
	return out
}

type stepKey struct{ ep, step int32 }

func TestBatchesCoverSplitOnceInSeededOrder(t *testing.T) {
	d, err := Open(smallDataset(t))
	if err != nil {
		t.Fatal(err)
	}
	// The reference: every step of the split read in order.
	want := map[stepKey][]float32{}
	for _, ep := range d.Episodes(SplitTrain) {
		err := d.ReadEpisode(ep, func(s *Sample) error {
			want[stepKey{s.Row.Episode, s.Row.Step}] = append([]float32(nil), s.Obs.Nodes...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	order := func(epoch int) []stepKey {
		o := DefaultBatchOptions(SplitTrain, 64)
		o.Seed, o.Epoch, o.ChunkRows, o.Open = 9, epoch, 50, 4
		b, err := d.Batches(o)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		var keys []stepKey
		seen := map[stepKey]bool{}
		for {
			bt, err := b.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for j := range bt.Size {
				k := stepKey{bt.Episode[j], bt.Step[j]}
				if seen[k] {
					t.Fatalf("epoch %d: step %v twice", epoch, k)
				}
				seen[k] = true
				keys = append(keys, k)
				n := int(bt.NumNodes[j]) * bt.NodeDim
				got := bt.Nodes[j*bt.MaxNodes*bt.NodeDim:][:n]
				if !reflect.DeepEqual(got, want[k]) {
					t.Fatalf("epoch %d: batch observation of %v differs from the episode read", epoch, k)
				}
			}
		}
		if len(keys) != len(want) {
			t.Fatalf("epoch %d: %d samples, split has %d", epoch, len(keys), len(want))
		}
		return keys
	}
	a, again, other := order(0), order(0), order(1)
	if !reflect.DeepEqual(a, again) {
		t.Fatal("same seed and epoch gave a different order")
	}
	if reflect.DeepEqual(a, other) {
		t.Fatal("another epoch gave the same order")
	}
	inOrder := 0
	for i := 1; i < len(a); i++ {
		if a[i].ep == a[i-1].ep && a[i].step == a[i-1].step+1 {
			inOrder++
		}
	}
	if inOrder > len(a)/2 {
		t.Fatalf("%d of %d samples directly follow their predecessor: not shuffled", inOrder, len(a))
	}
}

func TestOpenRejectsChangedShards(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func(path string) error
		want   string
	}{
		{"flipped byte", func(p string) error {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			data[len(data)/2] ^= 0xff
			return os.WriteFile(p, data, 0o644)
		}, "sha256"},
		{"truncated", func(p string) error {
			fi, err := os.Stat(p)
			if err != nil {
				return err
			}
			return os.Truncate(p, fi.Size()-100)
		}, "truncated"},
		{"missing", os.Remove, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := smallDataset(t)
			m, err := ReadManifest(dir)
			if err != nil {
				t.Fatal(err)
			}
			shard := m.Splits[SplitTrain].Shards[1].Path
			if err := tc.damage(filepath.Join(dir, shard)); err != nil {
				t.Fatal(err)
			}
			_, err = Open(dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), filepath.Base(shard)) {
				t.Fatalf("Open error %v, want one naming %s and %q", err, shard, tc.want)
			}
		})
	}
}

func TestSplitIsDeterministicByEpisode(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}
	s1 := assignSplits(names, 0.2, 3)
	rev := append([]string(nil), names...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	s2 := assignSplits(rev, 0.2, 3)
	val := 0
	for i, n := range names {
		if s1[i] != s2[len(names)-1-i] {
			t.Fatalf("episode %s: split depends on listing order", n)
		}
		if s1[i] == SplitVal {
			val++
		}
	}
	if val != 2 {
		t.Fatalf("%d validation episodes, want 2", val)
	}
	for _, tc := range []struct {
		n       int
		frac    float64
		wantVal int
	}{{1, 0.1, 0}, {2, 0.1, 1}, {5, 0.1, 1}, {5, 0, 0}} {
		got := 0
		for _, s := range assignSplits(names[:tc.n], tc.frac, 1) {
			if s == SplitVal {
				got++
			}
		}
		if got != tc.wantVal {
			t.Errorf("%d episodes at %v: %d in validation, want %d", tc.n, tc.frac, got, tc.wantVal)
		}
	}
}

func TestBatchesDoNotDependOnWorkers(t *testing.T) {
	d, err := Open(smallDataset(t))
	if err != nil {
		t.Fatal(err)
	}
	read := func(workers int) (out [][]float32) {
		o := DefaultBatchOptions(SplitTrain, 50)
		o.Seed, o.ChunkRows, o.Open, o.Workers = 4, 60, 5, workers
		b, err := d.Batches(o)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		for {
			bt, err := b.Next()
			if err == io.EOF {
				return out
			}
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, append(append([]float32(nil), bt.Nodes[:bt.Size*bt.MaxNodes*bt.NodeDim]...), float32(bt.Step[0])))
		}
	}
	if one, three := read(1), read(3); !reflect.DeepEqual(one, three) {
		t.Fatal("batches differ between 1 and 3 workers")
	}
}
