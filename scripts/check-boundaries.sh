#!/usr/bin/env bash
# Fails when a package outside the allowed ones imports gotch, directly or through another
# package (DESIGN.md: libtorch stays out of the simulator, datasets, registry, pipeline...).
# With "--print-nocgo" it prints the packages that do not depend on gotch instead.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
module="$(go list -m)"
allowed="^$module/(nn|pretrain|finetune|eval|cmd)(/|$)"
# Plain module mode (no go.work): the boundary must hold for a fresh clone.
listing="$(GOWORK=off go list -e -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' ./...)"
if [[ "${1:-}" == "--print-nocgo" ]]; then
	grep -v ' github.com/sugarme/gotch' <<<"$listing" | cut -d' ' -f1
	exit 0
fi
bad="$(grep ' github.com/sugarme/gotch' <<<"$listing" | cut -d' ' -f1 | grep -Ev "$allowed" || true)"
if [[ -n "$bad" ]]; then
	echo "check-boundaries: these packages must not depend on gotch/libtorch:" >&2
	echo "$bad" >&2
	exit 1
fi
echo "check-boundaries: gotch is imported only by nn, pretrain, finetune, eval, cmd"
