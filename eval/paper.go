package eval

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// paperNames maps our heuristic names to the ATC'23 artifact's policy column.
var paperNames = map[string]string{
	"random":     "01-Random",
	"dotprod":    "02-DotProd",
	"clustering": "03-GpuClustering",
	"packing":    "04-GpuPacking",
	"bestfit":    "05-BestFit",
	"fgd":        "06-FGD",
}

// PaperCurve is the paper's published curves for one heuristic on one trace, averaged over
// its seeds; element i is the value at i% arrived. FragGPU (fragmented GPU in percent of the
// cluster's GPUs, as the artifact's table holds it) and FragRatioPct are nil when their tables
// are absent.
type PaperCurve struct {
	Policy       string
	Seeds        int
	AllocGPUPct  []float64
	FragGPU      []float64
	FragRatioPct []float64
}

// Point is the paper's headline numbers from the curve.
func (c PaperCurve) Point() *PaperPoint {
	at := func(i int) float64 { return c.AllocGPUPct[min(i, len(c.AllocGPUPct)-1)] }
	p := &PaperPoint{Policy: c.Policy, AllocGPUPct100: at(100), AllocGPUPct130: at(130), Seeds: c.Seeds}
	if len(c.FragGPU) > 130 {
		p.FragGPUPct130 = &c.FragGPU[130]
	}
	return p
}

// Paper holds the published curves keyed by trace short name, then by our heuristic name.
type Paper map[string]map[string]PaperCurve

// The fragmentation tables sit next to the allocation table in the paper's artifact.
const (
	paperFragTable      = "analysis_frag_discrete.csv"
	paperFragRatioTable = "analysis_frag_ratio_discrete.csv"
)

// LoadPaper reads the allocation table (analysis_allo_discrete.csv) and, when present beside
// it, the fragment tables; each (workload, policy) is averaged over its tune-1.3 seeds.
func LoadPaper(allocPath string) (Paper, error) {
	alloc, err := loadPaperTable(allocPath)
	if err != nil {
		return nil, err
	}
	p := Paper{}
	for trace, byPolicy := range alloc {
		p[trace] = map[string]PaperCurve{}
		for name, c := range byPolicy {
			p[trace][name] = PaperCurve{Policy: paperNames[name], Seeds: c.seeds, AllocGPUPct: c.mean}
		}
	}
	dir := filepath.Dir(allocPath)
	for _, extra := range []struct {
		file string
		set  func(*PaperCurve, []float64)
	}{
		{paperFragTable, func(c *PaperCurve, v []float64) { c.FragGPU = v }},
		{paperFragRatioTable, func(c *PaperCurve, v []float64) { c.FragRatioPct = v }},
	} {
		path := filepath.Join(dir, extra.file)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		t, err := loadPaperTable(path)
		if err != nil {
			return nil, err
		}
		for trace, byPolicy := range t {
			for name, c := range byPolicy {
				if pc, ok := p[trace][name]; ok {
					extra.set(&pc, c.mean)
					p[trace][name] = pc
				}
			}
		}
	}
	return p, nil
}

type paperMean struct {
	seeds int
	mean  []float64
}

// loadPaperTable reads one artifact table (columns workload, sc_policy, tune, seed, ..., 0..130).
func loadPaperTable(path string) (map[string]map[string]paperMean, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, need := range []string{"workload", "sc_policy", "tune", "seed", "0", "130"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: header lacks column %q", path, need)
		}
	}
	if col["130"] != col["0"]+130 {
		return nil, fmt.Errorf("%s: columns 0..130 are not contiguous", path)
	}
	ours := map[string]string{}
	for k, v := range paperNames {
		ours[v] = k
	}
	sums := map[string]map[string]paperMean{}
	for line := 2; ; line++ {
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		name, ok := ours[rec[col["sc_policy"]]]
		if !ok || rec[col["tune"]] != "1.3" {
			continue
		}
		trace := strings.TrimPrefix(rec[col["workload"]], podListPrefix)
		if sums[trace] == nil {
			sums[trace] = map[string]paperMean{}
		}
		c := sums[trace][name]
		if c.mean == nil {
			c.mean = make([]float64, 131)
		}
		for pct := range 131 {
			v, err := strconv.ParseFloat(rec[col["0"]+pct], 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: column %d: %w", path, line, col["0"]+pct+1, err)
			}
			c.mean[pct] += v
		}
		c.seeds++
		sums[trace][name] = c
	}
	for _, byPolicy := range sums {
		for _, c := range byPolicy {
			for i := range c.mean {
				c.mean[i] /= float64(c.seeds)
			}
		}
	}
	return sums, nil
}

// Lookup returns the paper's curve for a heuristic on a trace when the evaluated workload is
// the paper's (tune 1.3), else false.
func (p Paper) Lookup(ref PolicyRef, trace string, tune float64) (PaperCurve, bool) {
	if p == nil || ref.Kind != Heuristic || tune != 1.3 {
		return PaperCurve{}, false
	}
	c, ok := p[trace][ref.Name]
	return c, ok
}
