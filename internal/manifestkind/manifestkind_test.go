package manifestkind

import (
	"os"
	"path/filepath"
	"testing"
)

func TestExpect(t *testing.T) {
	root := t.TempDir()
	write := func(name, manifest string) string {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if manifest != "" {
			if err := os.WriteFile(filepath.Join(dir, ManifestFile), []byte(manifest), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	ds := write("ds", `{"schema_version":"transitions-v1","rows":3}`)
	ck := write("ck", `{"format":1,"model":"x"}`)
	empty := write("empty", "")
	odd := write("odd", `{"rows":3}`)
	cases := []struct {
		dir  string
		want Kind
		err  string
	}{
		{ds, Dataset, ""},
		{ck, Checkpoint, ""},
		{ds, Checkpoint, ds + " is a dataset, not a checkpoint"},
		{ck, Dataset, ck + " is a checkpoint, not a dataset"},
		{empty, Checkpoint, empty + ": not a checkpoint: no manifest.json"},
		{odd, Dataset, odd + `: not a dataset: manifest.json has no "schema_version" field`},
		{filepath.Join(root, "nope"), Checkpoint, filepath.Join(root, "nope") + " does not exist"},
		{filepath.Join(ds, ManifestFile), Dataset, filepath.Join(ds, ManifestFile) + " is a file; a dataset is a directory"},
	}
	for _, c := range cases {
		err := Expect(c.dir, c.want)
		if (err == nil) != (c.err == "") || (err != nil && err.Error() != c.err) {
			t.Errorf("Expect(%s, %s) = %v, want %q", c.dir, c.want, err, c.err)
		}
	}
}

// A fine-tune killed before its first checkpoint leaves only its run record; rerunning the same
// command must resume there, so the folder is a checkpoint, not a folder of decision logs.
func TestDirOfUnfinishedFinetune(t *testing.T) {
	root := t.TempDir()
	cases := map[string]Kind{"metrics.jsonl": Checkpoint, "seed-42.jsonl": LogSet}
	for file, want := range cases {
		dir := filepath.Join(root, file+".d")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if got, err := DirOf(dir); err != nil || got != want {
			t.Errorf("DirOf(folder with %s) = %v, %v; want %v", file, got, err, want)
		}
	}
}
