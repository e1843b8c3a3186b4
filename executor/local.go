package executor

import (
	"context"
	"fmt"
	"sync"
)

// Local runs the shards in this process, Parallelism at a time.
type Local struct{ Parallelism int }

// Run calls w.Local for every shard; the first error cancels the others and is returned,
// naming its shard when there are several.
func (l *Local) Run(ctx context.Context, w Work) ([][]byte, error) {
	if w.Local == nil {
		return nil, fmt.Errorf("%s: no in-process form of this work", w.Name)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	parts := make([][]byte, w.Shards)
	sem := make(chan struct{}, max(1, l.Parallelism))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		done int
	)
	for i := range w.Shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			part, err := w.Local(ctx, i)
			if err != nil {
				if w.Shards > 1 {
					err = fmt.Errorf("%s shard %d/%d: %w", w.Name, i, w.Shards, err)
				}
				cancel(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			parts[i], done = part, done+1
			if w.Progress != nil {
				w.Progress(done, w.Shards)
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	return parts, nil
}
