#!/usr/bin/env bash
# The timed openb world's acceptance (issue 21): 50,000 default-trace tasks at offered load 1.0
# on the 1,213-node cluster, FGD placement, FIFO with backfill, run times capped at 4 h. Prints
# the benchmark line (ns/op and B/op of the run alone) and the whole test process's wall time and
# peak RSS (loading the traces and drawing the workload included); the target is 3 s and 200 MB.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 GOWORK=off go test -c -o "$tmp/tasks.test" ./tasks
/usr/bin/time -v -o "$tmp/time.txt" "$tmp/tasks.test" -test.run '^$' -test.bench '^BenchmarkOpenb50k$' \
	-test.benchtime 1x -test.benchmem | grep '^Benchmark'
awk -F': ' '/Elapsed \(wall clock\)/ {print "timed openb 50k: process wall " $2} /Maximum resident set size/ {printf "timed openb 50k: peak RSS %.0f MB\n", $2/1024}' "$tmp/time.txt"
