package sim

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/schedrl/schedrl/internal/repotest"
)

const (
	podHeader  = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	podOK      = "p0,12000,16384,1,1000,,LS,Running,0,100,0\n"
	nodeHeader = "sn,cpu_milli,memory_mib,gpu,model\n"
)

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadTasksBadInput(t *testing.T) {
	cases := []struct {
		name, body string
		want       string // regexp on the error, after the file name
	}{
		{"missing column", "name,cpu_milli,memory_mib,num_gpu\np0,1,1,0\n", `:1: missing column "gpu_milli"`},
		{"extra column", strings.TrimSuffix(podHeader, "\n") + ",owner\n", `:1:12: extra column "owner"`},
		{"missing fields", podHeader + podOK + "p1,1000,1\n", `:3: missing columns: 3 fields, header has 11`},
		{"extra fields", podHeader + "p1,1000,1,0,0,,LS,Running,0,1,0,9\n", `:2: extra columns: 12 fields`},
		{"not a number", podHeader + "p1,lots,1,0,0,,LS,Running,0,1,0\n", `:2:4 \(cpu_milli\): "lots" is not an integer`},
		{"negative", podHeader + "p1,1000,-5,0,0,,LS,Running,0,1,0\n", `:2:9 \(memory_mib\): negative value -5`},
		{"gpu_milli zero", podHeader + "p1,1000,1,1,0,,LS,Running,0,1,0\n", `:2:\d+ \(gpu_milli\): gpu_milli 0 outside 1..1000`},
		{"gpu_milli too big", podHeader + "p1,1000,1,1,1001,,LS,Running,0,1,0\n", `:2:13 \(gpu_milli\): gpu_milli 1001 outside 1..1000`},
		{"num_gpu too big", podHeader + "p1,1000,1,9,1000,,LS,Running,0,1,0\n", `:2:\d+ \(num_gpu\): num_gpu 9 outside 0..8`},
		{"whole gpu share", podHeader + "p1,1000,1,2,500,,LS,Running,0,1,0\n", `:2:13 \(gpu_milli\): whole-GPU task \(num_gpu 2\) with gpu_milli 500`},
		{"cpu task with share", podHeader + "p1,1000,1,0,300,,LS,Running,0,1,0\n", `:2:13 \(gpu_milli\): gpu_milli 300 on a CPU-only task`},
		{"duplicate name", podHeader + podOK + podOK, `:3:1 \(name\): duplicate task name "p0" \(first on line 2\)`},
		{"deleted before created", podHeader + "p1,1000,1,0,0,,LS,Running,50,10,0\n", `:2:30 \(deletion_time\): deletion_time 10 before creation_time 50`},
		{"scheduled before created", podHeader + "p1,1000,1,0,0,,LS,Running,50,90,40\n", `:2:33 \(scheduled_time\): scheduled_time 40 before creation_time 50`},
		{"scheduled after deleted", podHeader + "p1,1000,1,0,0,,LS,Running,50,90,95\n", `:2:33 \(scheduled_time\): scheduled_time 95 after deletion_time 90`},
		{"empty", "", `:1: empty file`},
		{"header only", podHeader, `: no tasks`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, "pods.csv", tc.body)
			tasks, err := LoadTasks(p)
			if err == nil {
				t.Fatalf("no error, %d tasks", len(tasks))
			}
			if tasks != nil {
				t.Fatal("tasks returned with an error")
			}
			if !regexp.MustCompile(regexp.QuoteMeta(p) + tc.want).MatchString(err.Error()) {
				t.Fatalf("error %q does not match %q", err, tc.want)
			}
		})
	}
}

func TestLoadNodesBadInput(t *testing.T) {
	cases := []struct{ name, body, want string }{
		{"missing column", "sn,cpu_milli,memory_mib,gpu\nn,1,1,0\n", `:1: missing column "model"`},
		{"gpu count", nodeHeader + "n0,1000,1,9,T4\n", `:2:\d+ \(gpu\): 9 GPUs, at most 8`},
		{"no model", nodeHeader + "n0,1000,1,2,\n", `:2:13 \(model\): empty GPU model`},
		{"duplicate", nodeHeader + "n0,1000,1,2,T4\nn0,1000,1,2,T4\n", `:3:1 \(sn\): duplicate node name "n0"`},
		{"not a number", nodeHeader + "n0,1000,x,2,T4\n", `:2:\d+ \(memory_mib\): "x" is not an integer`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, "nodes.csv", tc.body)
			nodes, err := LoadNodes(p)
			if err == nil || nodes != nil {
				t.Fatalf("LoadNodes = %d nodes, %v", len(nodes), err)
			}
			if !regexp.MustCompile(regexp.QuoteMeta(p) + tc.want).MatchString(err.Error()) {
				t.Fatalf("error %q does not match %q", err, tc.want)
			}
		})
	}
}

func TestLoadGoodFiles(t *testing.T) {
	p := writeFile(t, "pods.csv", podHeader+podOK+"p1,4000,100,1,300,V100M16|T4|T4,BE,Pending,5,9,\n")
	tasks, err := LoadTasks(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 2 || tasks[1].Spec() != "V100M16|T4" || tasks[1].Kind() != "share" || tasks[0].Kind() != "1-gpu" || tasks[0].Deletion != 100 ||
		tasks[0].Scheduled != 0 || tasks[1].Scheduled != -1 {
		t.Fatalf("tasks %+v", tasks)
	}
	short := writeFile(t, "multigpu.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np0,1000,1,8,1000\n")
	if tasks, err = LoadTasks(short); err != nil || tasks[0].Kind() != "8-gpu" || tasks[0].Deletion != -1 || tasks[0].Scheduled != -1 {
		t.Fatalf("five-column pod list: %v %+v", err, tasks)
	}
}

func TestLoadOpenbTraces(t *testing.T) {
	dir := repotest.OpenbDir()
	nodes, err := LoadNodes(filepath.Join(dir, "openb_node_list_gpu_node.csv"))
	if err != nil {
		t.Fatal(err)
	}
	gpus := 0
	for _, n := range nodes {
		gpus += n.GPUs
	}
	if len(nodes) != 1213 || gpus != 6212 {
		t.Fatalf("%d nodes, %d GPUs; want 1213 and 6212", len(nodes), gpus)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "openb_pod_list_*.csv"))
	for _, f := range files {
		if _, err := LoadTasks(f); err != nil {
			t.Error(err)
		}
	}
}
