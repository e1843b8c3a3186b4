package eval

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
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

// PaperCurve is the paper's allocation curve for one heuristic on one trace, averaged
// over its seeds. AllocGPUPct[i] is the allocation at i% arrived.
type PaperCurve struct {
	Policy      string
	Seeds       int
	AllocGPUPct []float64
}

// Point is the paper's headline numbers from the curve.
func (c PaperCurve) Point() *PaperPoint {
	at := func(i int) float64 { return c.AllocGPUPct[min(i, len(c.AllocGPUPct)-1)] }
	return &PaperPoint{Policy: c.Policy, AllocGPUPct100: at(100), AllocGPUPct130: at(130), Seeds: c.Seeds}
}

// Paper holds the published curves keyed by trace short name, then by our heuristic name.
type Paper map[string]map[string]PaperCurve

// LoadPaper reads analysis_allo_discrete.csv (columns workload, sc_policy, tune, seed,
// total_gpus, 0..130) and averages each (workload, policy) over its tune-1.3 seeds.
func LoadPaper(path string) (Paper, error) {
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
	sums := Paper{}
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
			sums[trace] = map[string]PaperCurve{}
		}
		c := sums[trace][name]
		if c.AllocGPUPct == nil {
			c = PaperCurve{Policy: rec[col["sc_policy"]], AllocGPUPct: make([]float64, 131)}
		}
		for pct := range 131 {
			v, err := strconv.ParseFloat(rec[col["0"]+pct], 64)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: column %d: %w", path, line, col["0"]+pct+1, err)
			}
			c.AllocGPUPct[pct] += v
		}
		c.Seeds++
		sums[trace][name] = c
	}
	for _, byPolicy := range sums {
		for _, c := range byPolicy {
			for i := range c.AllocGPUPct {
				c.AllocGPUPct[i] /= float64(c.Seeds)
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
