package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/schedrl/schedrl/defrag/online"
	"github.com/schedrl/schedrl/env"
	"github.com/schedrl/schedrl/internal/checkpoint"
)

// drrPolicy makes `defrag online --model` run the whole DRR policy when the model is a
// placement checkpoint (a directory or MODEL@ALIAS|N): the checkpoint places every start and
// online.DRRRescheduler relocates running tasks on the trigger. ok is false for any other model (a
// defrag checkpoint stays the rescheduler, as before).
func (o *defragOnlineOptions) drrPolicy(ctx context.Context) (p online.Planner, ok bool, err error) {
	dir := o.Model
	ref := false
	if _, statErr := os.Stat(dir); statErr != nil && strings.Contains(dir, "@") {
		if dir, _, err = pullModel(ctx, o.Registry, o.Model, slog.Default()); err != nil {
			return nil, false, err
		}
		defer os.RemoveAll(filepath.Dir(dir))
		ref = true
	}
	m, err := checkpoint.Read(dir)
	if err != nil || m.Env != env.PlacementName {
		return nil, false, nil // not a placement checkpoint: the defrag loader names what is wrong
	}
	if ref {
		o.Placer = o.Model // the placer resolver pulls the same version again for the run
	} else {
		o.Placer = "ckpt:" + dir
	}
	o.Method = online.DRRRescheduler
	p, err = online.NewPlanner(online.DRRRescheduler)
	return p, true, err
}
