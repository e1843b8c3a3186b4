package pipeline

import (
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Progress is how a stage reports how far it got: a bar on a terminal, plain log lines
// otherwise. Safe for concurrent use.
type Progress interface {
	// Start (re)sets the total amount of work; 0 means unknown. unit names it ("decisions").
	Start(total int64, unit string)
	// Add counts n more units done.
	Add(n int64)
}

// stageProgress is the Progress of one stage in the run; finish closes its bar.
type stageProgress interface {
	Progress
	finish()
}

func newProgress(terminal bool, w io.Writer, log *slog.Logger, label string) stageProgress {
	if terminal {
		return &barProgress{w: w, label: label}
	}
	return &lineProgress{log: log, label: label, every: 10 * time.Second}
}

// barProgress draws a progressbar on the terminal.
type barProgress struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	bar   *progressbar.ProgressBar
}

func (p *barProgress) Start(total int64, unit string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
	}
	if total <= 0 {
		total = -1 // spinner
	}
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(p.label),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }),
	)
}

func (p *barProgress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Add64(n)
	}
}

func (p *barProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
}

// lineProgress logs a line at most every `every`, and at each tenth of a known total.
type lineProgress struct {
	mu          sync.Mutex
	log         *slog.Logger
	label, unit string
	every       time.Duration
	total, done int64
	lastTenth   int64
	last, start time.Time
}

func (p *lineProgress) Start(total int64, unit string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.total, p.unit, p.done, p.lastTenth = total, unit, 0, 0
	p.start = time.Now()
	p.last = p.start
}

func (p *lineProgress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	now := time.Now()
	tenth := int64(0)
	if p.total > 0 {
		tenth = p.done * 10 / p.total
	}
	if tenth > p.lastTenth || now.Sub(p.last) >= p.every {
		p.lastTenth, p.last = tenth, now
		args := []any{"stage", p.label, "done", p.done, "unit", p.unit, "elapsed", now.Sub(p.start).Round(time.Second).String()}
		if p.total > 0 {
			args = append(args, "total", p.total, "pct", p.done*100/p.total)
		}
		p.log.Info("progress", args...)
	}
}

func (p *lineProgress) finish() {}

// NewProgress is a long command's own progress on w (stderr): a bar when terminal, else the
// lines a pipeline stage logs (every 10 s and at each tenth of the total).
func NewProgress(w io.Writer, terminal bool, label string) Progress {
	return newProgress(terminal, w, slog.New(slog.NewTextHandler(w, nil)), label)
}
