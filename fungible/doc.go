// Package fungible says what a whole allocation of a DL job is, whether it fits, and how fast the
// job runs on it. An allocation is a GPU type, servers and GPU indices, CPUs and memory per GPU
// and an optional partner job sharing the same GPUs; a ledger applies and releases allocations
// without ever over-committing a server; a job's speed is the product of three measured factors
// (Gavel's throughput for GPU type and count, Synergy's profile for CPUs and memory per GPU, and
// Gavel's pair throughputs when it shares GPUs). The baselines' allocation rules (fixed demand,
// Synergy's TUNE, Gandiva's packing, an integrated greedy) are functions of a ledger, the speed
// model and a job order that the caller supplies; the workload generator draws Gavel's job mix.
// docs/fungible.md describes the model, the mappings and the rules.
package fungible
