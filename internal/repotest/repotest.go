// Package repotest finds the repository's vendored data (data/) for tests and benchmarks,
// whatever package directory they run in.
package repotest

import (
	"path/filepath"
	"runtime"
)

// Root is the repository's root folder.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Data is a path under data/.
func Data(elem ...string) string {
	return filepath.Join(append([]string{Root(), "data"}, elem...)...)
}

// OpenbDir is the folder of the openb node and pod lists.
func OpenbDir() string { return Data("openb") }

// OpenbNodes is the 1,213-node GPU node list.
func OpenbNodes() string { return Data("openb", "openb_node_list_gpu_node.csv") }

// OpenbPods is the pod list of a named trace ("default", "gpushare40", ...).
func OpenbPods(trace string) string { return Data("openb", "openb_pod_list_"+trace+".csv") }

// PaperTable is the ATC'23 paper's GPU allocation table.
func PaperTable() string { return Data("fgd-paper", "analysis_allo_discrete.csv") }
