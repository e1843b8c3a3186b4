package pretrain

import (
	"math"
	"testing"

	"github.com/schedrl/schedrl/internal/config"
)

func TestLearningRate(t *testing.T) {
	c := config.PretrainConfig{LR: 1, LRMin: 0.1, WarmupSteps: 10}
	for _, tc := range []struct {
		schedule string
		step     int
		want     float64
	}{
		{"constant", 0, 0.1}, // warm-up: (step+1)/warmup of lr
		{"constant", 9, 1},
		{"constant", 500, 1},
		{"cosine", 10, 1},
		{"cosine", 60, 0.55}, // half way: the mean of lr and lr_min
		{"cosine", 110, 0.1},
		{"cosine", 1000, 0.1}, // past the end stays at lr_min
		{"linear", 35, 0.775},
		{"linear", 110, 0.1},
	} {
		c.LRSchedule = tc.schedule
		if got := learningRate(c, tc.step, 110); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s step %d: lr %v, want %v", tc.schedule, tc.step, got, tc.want)
		}
	}
}

// Validation subsampling takes exactly max decisions spread over the episode.
func TestValPickedSpreadsEvenly(t *testing.T) {
	for _, tc := range []struct{ max, rows int64 }{{10, 100}, {7, 1000}, {300, 8123}, {50, 20}, {0, 33}} {
		v := valSet{max: int(tc.max)}
		var n, first, last int64 = 0, -1, -1
		for s := range tc.rows {
			if v.picked(s, tc.rows) {
				n++
				if first < 0 {
					first = s
				}
				last = s
			}
		}
		want := tc.rows
		if tc.max > 0 {
			want = min(tc.max, tc.rows)
		}
		if n != want {
			t.Errorf("max %d of %d rows: picked %d, want %d", tc.max, tc.rows, n, want)
		}
		if want < tc.rows && (last < tc.rows*9/10 || first > tc.rows/max(1, want)) {
			t.Errorf("max %d of %d rows: picks span steps %d..%d, not the whole episode", tc.max, tc.rows, first, last)
		}
	}
}
