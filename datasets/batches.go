package datasets

import (
	"fmt"
	"io"
	"math/rand/v2"

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
	d      *Dataset
	o      BatchOptions
	rng    *rand.Rand
	chunks []chunk
	next   int
	open   []*cursor
	batch  Batch
}

type chunk struct {
	ep       EpisodeInfo
	from, to int64
}

// Batches starts an epoch over a split: the episodes are cut into chunks, the chunks shuffled,
// and samples drawn at random from Open chunks at a time.
func (d *Dataset) Batches(o BatchOptions) (*Batches, error) {
	if o.BatchSize < 1 || o.ChunkRows < 1 || o.Open < 1 {
		return nil, fmt.Errorf("batches: batch size %d, chunk rows %d and open chunks %d must be >= 1", o.BatchSize, o.ChunkRows, o.Open)
	}
	eps := d.Episodes(o.Split)
	if len(eps) == 0 {
		return nil, fmt.Errorf("dataset %s: split %q has no episodes", d.Dir, o.Split)
	}
	b := &Batches{d: d, o: o, rng: rand.New(rand.NewPCG(o.Seed, uint64(o.Epoch)))}
	for _, ep := range eps {
		for from := int64(0); from < ep.Rows; from += int64(o.ChunkRows) {
			b.chunks = append(b.chunks, chunk{ep: ep, from: from, to: min(ep.Rows, from+int64(o.ChunkRows))})
		}
	}
	b.rng.Shuffle(len(b.chunks), func(i, j int) { b.chunks[i], b.chunks[j] = b.chunks[j], b.chunks[i] })
	spec, err := env.SpecOf(d.Manifest.Env)
	if err != nil {
		return nil, err
	}
	n := d.MaxNodes()
	b.batch = Batch{MaxNodes: n, NodeDim: len(spec.Node), TaskDim: len(spec.Task), GlobalDim: len(spec.Global)}
	bs := o.BatchSize
	b.batch.NumNodes = make([]int32, bs)
	b.batch.Nodes = make([]float32, bs*n*b.batch.NodeDim)
	b.batch.Mask = make([]bool, bs*n)
	b.batch.Task = make([]float32, bs*b.batch.TaskDim)
	b.batch.Global = make([]float32, bs*b.batch.GlobalDim)
	b.batch.Action, b.batch.ActionGPUs = make([]int32, bs), make([]int32, bs)
	b.batch.Reward, b.batch.ReturnToGo = make([]float32, bs), make([]float32, bs)
	b.batch.Done = make([]bool, bs)
	b.batch.Episode, b.batch.Step = make([]int32, bs), make([]int32, bs)
	return b, nil
}

// Next returns the next batch (reused by the following call), or io.EOF when the epoch is
// over. The last batch may be smaller than BatchSize.
func (b *Batches) Next() (*Batch, error) {
	bt := &b.batch
	bt.Size = 0
	for bt.Size < b.o.BatchSize {
		for len(b.open) < b.o.Open && b.next < len(b.chunks) {
			c := b.chunks[b.next]
			b.next++
			cur, err := b.d.openCursor(c.ep, c.from, c.to)
			if err != nil {
				return nil, err
			}
			b.open = append(b.open, cur)
		}
		if len(b.open) == 0 {
			break
		}
		k := b.rng.IntN(len(b.open))
		s, err := b.open[k].next()
		if err == io.EOF {
			b.open[k].close()
			b.open[k] = b.open[len(b.open)-1]
			b.open = b.open[:len(b.open)-1]
			continue
		}
		if err != nil {
			return nil, err
		}
		bt.put(bt.Size, s)
		bt.Size++
	}
	if bt.Size == 0 {
		return nil, io.EOF
	}
	return bt, nil
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
	for _, c := range b.open {
		c.close()
	}
	b.open = nil
}
