package datasets

import (
	"fmt"
	"io"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/schedrl/schedrl/env"
)

// BatchOptions configures Batches.
type BatchOptions struct {
	Split     string
	BatchSize int
	// Seed and Epoch fix the order: the same pair gives the same batches.
	Seed  uint64
	Epoch int
	// ChunkRows consecutive steps are rebuilt from one place; Open chunks are interleaved at
	// random. Memory is bounded by Open clusters plus one batch, whatever the dataset's size.
	ChunkRows int
	Open      int
	// Workers rebuild observations in parallel (0: one per CPU); the batches do not depend on it.
	Workers int
}

// DefaultBatchOptions returns the defaults for a split and batch size.
func DefaultBatchOptions(split string, batchSize int) BatchOptions {
	return BatchOptions{Split: split, BatchSize: batchSize, ChunkRows: 512, Open: 16}
}

// Batch is a mini-batch of transitions with rebuilt observations, laid out for a network:
// node rows are padded to MaxNodes (padding has zero features and a false mask).
type Batch struct {
	Size                        int
	MaxNodes                    int
	NodeDim, TaskDim, GlobalDim int
	NumNodes                    []int32
	Nodes                       []float32 // Size x MaxNodes x NodeDim
	Mask                        []bool    // Size x MaxNodes
	Task                        []float32 // Size x TaskDim
	Global                      []float32 // Size x GlobalDim
	Action, ActionGPUs          []int32
	Reward, ReturnToGo          []float32
	Done                        []bool
	Episode, Step               []int32
}

// Batches streams shuffled mini-batches of one split for one epoch.
type Batches struct {
	d       *Dataset
	o       BatchOptions
	rng     *rand.Rand
	chunks  []chunk
	next    int
	open    []*openChunk
	workers int
	batch   Batch
}

type chunk struct {
	ep       EpisodeInfo
	from, to int64
}

// openChunk is a chunk being read: left steps not yet scheduled, cur (opened lazily by its
// worker) the rebuild state, slots the batch positions it fills in the current batch.
type openChunk struct {
	chunk
	id    int
	left  int64
	cur   *cursor
	slots []int
}

// Batches starts an epoch over a split: the episodes are cut into chunks, the chunks shuffled,
// and samples drawn at random from Open chunks at a time.
func (d *Dataset) Batches(o BatchOptions) (*Batches, error) {
	if o.BatchSize < 1 || o.ChunkRows < 1 || o.Open < 1 || o.Workers < 0 {
		return nil, fmt.Errorf("batches: batch size %d, chunk rows %d and open chunks %d must be >= 1, workers %d >= 0", o.BatchSize, o.ChunkRows, o.Open, o.Workers)
	}
	eps := d.Episodes(o.Split)
	if len(eps) == 0 {
		return nil, fmt.Errorf("dataset %s: split %q has no episodes", d.Dir, o.Split)
	}
	spec, err := env.SpecOf(d.Manifest.Env)
	if err != nil {
		return nil, err
	}
	b := &Batches{d: d, o: o, rng: rand.New(rand.NewPCG(o.Seed, uint64(o.Epoch))), workers: o.Workers}
	if b.workers == 0 {
		b.workers = runtime.GOMAXPROCS(0)
	}
	d.reserveCaches(b.workers)
	for _, ep := range eps {
		for from := int64(0); from < ep.Rows; from += int64(o.ChunkRows) {
			b.chunks = append(b.chunks, chunk{ep: ep, from: from, to: min(ep.Rows, from+int64(o.ChunkRows))})
		}
	}
	b.rng.Shuffle(len(b.chunks), func(i, j int) { b.chunks[i], b.chunks[j] = b.chunks[j], b.chunks[i] })
	n, bs := d.MaxNodes(), o.BatchSize
	bt := &b.batch
	*bt = Batch{MaxNodes: n, NodeDim: len(spec.Node), TaskDim: len(spec.Task), GlobalDim: len(spec.Global)}
	bt.NumNodes = make([]int32, bs)
	bt.Nodes = make([]float32, bs*n*bt.NodeDim)
	bt.Mask = make([]bool, bs*n)
	bt.Task = make([]float32, bs*bt.TaskDim)
	bt.Global = make([]float32, bs*bt.GlobalDim)
	bt.Action, bt.ActionGPUs = make([]int32, bs), make([]int32, bs)
	bt.Reward, bt.ReturnToGo = make([]float32, bs), make([]float32, bs)
	bt.Done = make([]bool, bs)
	bt.Episode, bt.Step = make([]int32, bs), make([]int32, bs)
	return b, nil
}

// Next returns the next batch (reused by the following call), or io.EOF when the epoch is
// over. The last batch may be smaller than BatchSize.
func (b *Batches) Next() (*Batch, error) {
	// Decide first which chunk fills each slot (only counts are needed), then rebuild the
	// chunks in parallel, each by one worker in step order: the result cannot depend on timing.
	var touched []*openChunk
	size := 0
	for size < b.o.BatchSize {
		for len(b.open) < b.o.Open && b.next < len(b.chunks) {
			c := b.chunks[b.next]
			b.open = append(b.open, &openChunk{chunk: c, id: b.next, left: c.to - c.from})
			b.next++
		}
		if len(b.open) == 0 {
			break
		}
		k := b.rng.IntN(len(b.open))
		oc := b.open[k]
		if len(oc.slots) == 0 {
			touched = append(touched, oc)
		}
		oc.slots = append(oc.slots, size)
		size++
		if oc.left--; oc.left == 0 {
			b.open[k] = b.open[len(b.open)-1]
			b.open = b.open[:len(b.open)-1]
		}
	}
	if size == 0 {
		return nil, io.EOF
	}
	errs := make([]error, b.workers)
	var wg sync.WaitGroup
	for w := range b.workers {
		wg.Go(func() {
			for _, oc := range touched {
				if oc.id%b.workers == w && errs[w] == nil {
					errs[w] = b.fill(oc, w)
				}
			}
		})
	}
	wg.Wait()
	for _, oc := range touched {
		oc.slots = oc.slots[:0]
		if oc.left == 0 && oc.cur != nil {
			oc.cur.close()
			oc.cur = nil
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	b.batch.Size = size
	return &b.batch, nil
}

// fill rebuilds the chunk's next steps into its slots of the batch.
func (b *Batches) fill(oc *openChunk, worker int) error {
	if oc.cur == nil {
		cur, err := b.d.openCursor(oc.ep, oc.from, oc.to, worker)
		if err != nil {
			return err
		}
		oc.cur = cur
	}
	for _, j := range oc.slots {
		s, err := oc.cur.next()
		if err != nil {
			return err
		}
		b.batch.put(j, s)
	}
	return nil
}

// put copies a sample into slot j, zeroing the padding left by a previous, larger cluster.
func (bt *Batch) put(j int, s *Sample) {
	n, nd := s.Obs.NumNodes, bt.NodeDim
	nodes := bt.Nodes[j*bt.MaxNodes*nd : (j+1)*bt.MaxNodes*nd]
	clear(nodes[copy(nodes, s.Obs.Nodes[:n*nd]):])
	mask := bt.Mask[j*bt.MaxNodes : (j+1)*bt.MaxNodes]
	clear(mask[copy(mask, s.Obs.Mask[:n]):])
	copy(bt.Task[j*bt.TaskDim:], s.Obs.Task)
	copy(bt.Global[j*bt.GlobalDim:], s.Obs.Global)
	r := &s.Row
	bt.NumNodes[j] = int32(n)
	bt.Action[j], bt.ActionGPUs[j] = r.Action, r.ActionGPUs
	bt.Reward[j], bt.ReturnToGo[j], bt.Done[j] = r.Reward, r.ReturnToGo, r.Done
	bt.Episode[j], bt.Step[j] = r.Episode, r.Step
}

// Close releases the open shard files.
func (b *Batches) Close() {
	for _, oc := range b.open {
		if oc.cur != nil {
			oc.cur.close()
		}
	}
	b.open = nil
}
