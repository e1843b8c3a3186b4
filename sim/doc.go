// Package sim is schedrl's cluster simulator: GPU nodes whose GPUs can be shared in milli-GPU
// units, tasks that ask for CPU, memory and a GPU share (none, part of one GPU, or whole GPUs),
// exact placement on a node and GPU set, removal and migration, and the ATC'23 (FGD paper)
// fragmentation measure with the arrival protocol that reproduces the paper's curves.
//
// # Model
//
// A [Cluster] is built from static [Node] descriptions (openb node CSV, see [LoadNodes]) and
// an optional [FragModel] (the workload's typical task shapes, see [TypicalShapes]). A [Task]
// (openb pod CSV, see [LoadTasks]) is placed with a [Choice]: a node index and a [GPUSet].
// Every mutation ([Cluster.Place], [Cluster.Remove], [Cluster.Migrate]) checks feasibility
// ([Cluster.Fits]) first and leaves the cluster unchanged on error, so an infeasible state can
// never be reached. Per-node fragment and cluster totals are kept incrementally; a node's
// [Cluster.NodeVersion] changes whenever its free resources change, so callers can cache
// per-node work.
//
// # Decisions
//
// [Cluster.Candidates] enumerates every feasible choice for a task (the action mask of the RL
// environments); [Cluster.FeasibleNodes] lists feasible nodes only. A [Placer] (implemented by
// package policy) picks one; placers break score ties by the cluster's tie order
// ([Cluster.SetTieOrder]), a seeded random node order as in the paper's simulator.
//
// # Protocol
//
// [Prepare] loads an [Experiment] (node and pod lists, tuning ratio, seed): typical shapes from
// the trace, the tuned and shuffled workload ([TuneWorkload]). [RunArrivals] runs the paper's
// protocol: tasks arrive one by one, each is placed or fails, nothing departs, and a
// [CurvePoint] is kept per integer arrived percentage (0..130), averaged over the events in
// that percentage as the paper's analysis does. [RunTraceOrder] replays the trace's own
// creations and deletions instead ([TraceOrder]), e.g. to build defragmentation start states.
// [RunBatch] runs many experiments in parallel. Seeds split into independent streams ([RNG]).
//
// # Logs
//
// [LogWriter] writes the versioned JSON-lines decision log documented in docs/decision-log.md:
// version 1 untimed ([LogVersion]), version 2 timed ([LogVersionTimed]: every event has a time,
// plus start, preempt and complete events, written by the event engine's worlds); [LogReader]
// reads both and [Replayer] applies a log's events to a cluster, validating each.
//
// A Cluster is not safe for concurrent use; use [Cluster.Clone] to give each goroutine its own.
package sim
