package datasets

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestInspect(t *testing.T) {
	dir := smallDataset(t)
	rep, err := Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := rep.Manifest
	var rows int64
	for name, st := range rep.Splits {
		var kinds int64
		for _, n := range st.TaskKinds {
			kinds += n
		}
		if st.Rows != m.Splits[name].Rows || kinds != st.Rows || st.Done != st.Episodes {
			t.Errorf("%s: %d rows (%d by kind, %d done) vs manifest %d rows, %d episodes", name, st.Rows, kinds, st.Done, m.Splits[name].Rows, st.Episodes)
		}
		if st.Feasible.Min < 1 || st.DistinctNodes < 2 || st.Reward.Count != st.Rows {
			t.Errorf("%s: implausible statistics %+v", name, st)
		}
		rows += st.Rows
	}
	if rows != m.Rows {
		t.Fatalf("splits hold %d rows, manifest %d", rows, m.Rows)
	}
	data, err := json.Marshal(rep)
	if err != nil || !bytes.Contains(data, []byte(`"manifest":{"schema_version"`)) || !bytes.Contains(data, []byte(`"task_kinds"`)) {
		t.Fatalf("JSON report %.200s: %v", data, err)
	}
	var out bytes.Buffer
	rep.Print(&out)
	for _, want := range []string{SchemaVersion, "placement-v1", "frag_delta", "binary mask", "train", "val"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
}
