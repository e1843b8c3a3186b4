package digest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	sum, size, err := File(path)
	// sha256("abc"), FIPS 180-2 appendix B.1.
	if err != nil || size != 3 || sum != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("File = %s, %d, %v", sum, size, err)
	}
	if _, _, err := File(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("missing file: no error")
	}
}

func TestContentLeavesOutWallClock(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	content := func(p, rel string) string {
		t.Helper()
		sum, err := Content(p, rel)
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	a := content(write("a.json", `{"loss": 0.5, "created": "2026-12-03T20:00:00Z", "epochs": [{"epoch": 1, "seconds": 2.9}]}`), "a.json")
	b := content(write("b.json", "{\"epochs\":[{\"seconds\":5.8,\"epoch\":1}],\n \"created\":\"2026-12-04T08:00:00Z\",\"loss\":0.5}"), "b.json")
	if a != b {
		t.Errorf("same values, other wall-clock fields and layout: %s vs %s", a, b)
	}
	if c := content(write("c.json", `{"loss": 0.50, "created": "x", "epochs": [{"epoch": 1}]}`), "c.json"); c == a {
		t.Error("0.5 written as 0.50 has the same digest: numbers must count as written")
	}
	if d := content(write("d.json", `{"loss": 0.6, "epochs": [{"epoch": 1}]}`), "d.json"); d == a {
		t.Error("another loss, same digest")
	}
	l1 := content(write("m1.jsonl", "{\"update\":1,\"env_steps_per_s\":4895.2}\n{\"update\":2,\"env_steps_per_s\":4858.5}\n"), "m1.jsonl")
	l2 := content(write("m2.jsonl", "{\"update\":1,\"env_steps_per_s\":5325.7}\n{\"update\":2,\"env_steps_per_s\":4274.0}\n"), "m2.jsonl")
	l3 := content(write("m3.jsonl", "{\"update\":2}\n{\"update\":1}\n"), "m3.jsonl")
	if l1 != l2 || l1 == l3 {
		t.Errorf("JSON lines: %s %s %s (want the first two equal, the reordered one different)", l1, l2, l3)
	}
	raw := write("model.ot", "abc")
	if got := content(raw, "model.ot"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("a binary file's content digest %s is not its sha256", got)
	}
	if got := content(write("bad.json", "abc"), "bad.json"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("JSON that does not parse: %s, want the sha256 of its bytes", got)
	}
	if got := content(write("report.md", "Wall time 4.6 s"), "report/report.md"); got != "" {
		t.Errorf("a rendered report has content digest %q, want none", got)
	}
}
