package main

import (
	"log/slog"

	"github.com/schedrl/schedrl/eval"
	"github.com/schedrl/schedrl/internal/config"
)

// learnedMakers make, by timed eval kind, the resolver of the kind's networks (an
// eval.Learned value) and the cleanup of what it pulls; each kind's command file registers its
// own, since they link libtorch, which eval does not.
var learnedMakers = map[string]func(config.Config, *slog.Logger) (any, func()){}

func registerLearned(kind string, newResolver func(config.Config, *slog.Logger) (any, func())) {
	if _, dup := learnedMakers[kind]; dup {
		panic("learned resolver of " + kind + " registered twice")
	}
	learnedMakers[kind] = newResolver
}

// learnedResolvers are every registered kind's resolvers for cfg, and one cleanup for all.
func learnedResolvers(cfg config.Config, log *slog.Logger) (eval.Learned, func()) {
	l, cleanups := eval.Learned{}, []func(){}
	for kind, newResolver := range learnedMakers {
		r, cleanup := newResolver(cfg, log)
		l[kind], cleanups = r, append(cleanups, cleanup)
	}
	return l, func() {
		for _, c := range cleanups {
			c()
		}
	}
}
