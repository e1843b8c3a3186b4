#!/usr/bin/env bash
# The project's Go packages, and the libtorch boundary between them.
#   packages.sh all     every package whose .go files git tracks or would track (scratch in
#                       git-ignored folders such as out/ is left out: a local run tests what CI does)
#   packages.sh nocgo   those of them that do not depend on gotch: they must build and test
#                       with CGO_ENABLED=0
#   packages.sh check   fails when a package outside nn, pretrain, finetune and cmd
#                       depends on gotch, directly or through another package (docs/design.md)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
module="$(GOWORK=off go list -m)"

# tracked: folders holding Go files git tracks or would track (not ignored), as ./dir patterns.
tracked() {
	git ls-files --cached --others --exclude-standard '*.go' | xargs -r -n1 dirname | sort -u | sed 's|^|./|'
}

# listing: "importpath dep dep ..." per tracked package, in plain module mode (no go.work), as
# a fresh clone sees it.
listing() {
	local pkgs
	mapfile -t pkgs < <(tracked)
	[[ ${#pkgs[@]} -gt 0 ]] || { echo "packages: no tracked Go packages" >&2; exit 1; }
	GOWORK=off go list -e -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' "${pkgs[@]}"
}

case "${1:-}" in
all) listing | cut -d' ' -f1 ;;
nocgo) listing | grep -v ' github.com/sugarme/gotch' | cut -d' ' -f1 || true ;;
check)
	bad="$(listing | grep ' github.com/sugarme/gotch' | cut -d' ' -f1 |
		grep -Ev "^$module/(nn|pretrain|finetune|cmd)(/|$)" || true)"
	if [[ -n "$bad" ]]; then
		echo "packages: these must not depend on gotch/libtorch (only nn, pretrain, finetune, cmd may):" >&2
		echo "$bad" >&2
		exit 1
	fi
	echo "packages: gotch is imported only by nn, pretrain, finetune, cmd"
	;;
*)
	echo "usage: $0 all|nocgo|check" >&2
	exit 2
	;;
esac
