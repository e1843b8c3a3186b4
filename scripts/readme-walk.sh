#!/usr/bin/env bash
# Walks README.md as a newcomer would: a fresh clone of HEAD in a temporary folder, the built
# binary, then every command of README.md in the order written, from the clone's root (and one
# from another folder). Each command is run as written, run in the smoke form that
# scripts/readme-walk.plan gives (tiny seeds, durations, steps; the config env of
# scripts/readme-walk.env), or skipped with the plan's reason. A README command that the plan
# does not name, or a plan entry that README no longer has, fails the walk before anything runs.
#
# Usage: scripts/readme-walk.sh            (make test-readme; KEEP=1 keeps the clone)
#        scripts/readme-walk.sh --list     (the README's commands as parsed, one a line)
#        scripts/readme-walk.sh --check    (only the README/plan agreement)
# docs/readme-walk.md says what runs and what is skipped, and why.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
readme="${README:-$root/README.md}"
plan="$root/scripts/readme-walk.plan"
envfile="$root/scripts/readme-walk.env"

# readme_commands prints README's commands, one a line: the lines of its ```sh blocks
# (comments dropped, continuation lines and for loops joined), the commands in the Stages
# table's command column, and `bin/schedrl ...` spans of the prose; each distinct text once.
readme_commands() {
	awk '
	function emit(c) {
		gsub(/[ \t]+/, " ", c); sub(/^ /, "", c); sub(/ $/, "", c)
		if (c != "" && !(c in seen)) { seen[c] = 1; print c }
	}
	function spans(s, re,    m) {
		while (match(s, /`[^`]+`/)) {
			m = substr(s, RSTART + 1, RLENGTH - 2)
			if (m ~ re) emit(m)
			s = substr(s, RSTART + RLENGTH)
		}
	}
	/^```/ {
		if (inblock) { if (insh && acc != "") emit(acc); insh = 0; inblock = 0 }
		else { inblock = 1; insh = ($0 ~ /^```sh$/); acc = "" }
		next
	}
	insh {
		line = $0
		if (line ~ /^[ \t]*#/) next
		sub(/[ \t]+#[ \t].*$/, "", line)
		if (line ~ /^[ \t]*$/) next
		cont = line ~ /\\$/
		if (cont) sub(/\\$/, "", line)
		acc = acc " " line
		if (acc ~ /^[ \t]*for / && acc !~ /done[; \t]*$/) next
		if (cont) next
		emit(acc); acc = ""
		next
	}
	inblock { next }
	/^\| *stage *\|/ { stages = 1; next }
	stages && /^\|/ { n = split($0, col, "|"); spans(col[3], "^(schedrl|make|bin/schedrl|mkdir) "); next }
	{ stages = 0; spans($0, "^bin/schedrl ") }
	' "$readme"
}

# plan_entries prints the plan as "COMMAND<TAB>ACTION" lines: a command line, then its action
# line (indented: "run", "as: COMMAND", "skip: REASON").
plan_entries() {
	awk '
	/^#/ || /^$/ { next }
	/^[ \t]/ { a = $0; sub(/^[ \t]+/, "", a); if (cmd == "") { print "plan: action without a command: " a > "/dev/stderr"; exit 2 }
		print cmd "\t" a; cmd = ""; next }
	{ if (cmd != "") { print "plan: no action for: " cmd > "/dev/stderr"; exit 2 } cmd = $0 }
	END { if (cmd != "") { print "plan: no action for: " cmd > "/dev/stderr"; exit 2 } }
	' "$plan"
}

declare -A action
entries="$(plan_entries)"
while IFS=$'\t' read -r c a; do
	[[ -n "$c" ]] && action["$c"]="$a"
done <<<"$entries"

mapfile -t cmds < <(readme_commands)
if [[ "${1:-}" == --list ]]; then
	printf '%s\n' "${cmds[@]}"
	exit 0
fi

bad=0
declare -A inreadme
for c in "${cmds[@]}"; do
	inreadme["$c"]=1
	if [[ -z "${action[$c]:-}" ]]; then
		echo "readme-walk: README.md command not in scripts/readme-walk.plan (run it, give its smoke form, or skip it with a reason): $c" >&2
		bad=1
	fi
done
for c in "${!action[@]}"; do
	if [[ -z "${inreadme[$c]:-}" ]]; then
		echo "readme-walk: scripts/readme-walk.plan names a command README.md no longer has: $c" >&2
		bad=1
	fi
done
for c in "${!action[@]}"; do
	case "${action[$c]}" in
	run | "as: "?* | "skip: "?*) ;;
	*)
		echo "readme-walk: scripts/readme-walk.plan: action of \"$c\" is not run, as: COMMAND or skip: REASON: ${action[$c]}" >&2
		bad=1
		;;
	esac
done
((bad == 0)) || exit 1
if [[ "${1:-}" == --check ]]; then
	echo "readme-walk: ${#cmds[@]} README commands, each run or skipped by scripts/readme-walk.plan"
	exit 0
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/schedrl-readme-walk.XXXXXX")"
if [[ -z "${KEEP:-}" ]]; then
	trap 'rm -rf "$work"' EXIT
else
	echo "readme-walk: keeping $work"
fi
clone="$work/schedrl"
rev="$(git -C "$root" rev-parse HEAD)"
git clone --quiet --shared --no-checkout "$root" "$clone"
git -C "$clone" checkout --quiet --detach "$rev"

# The clone shares the toolchain and servers of this checkout's .deps (everything but the
# go.work, which names the tree it builds).
[[ -f "$root/.deps/go.work" ]] || {
	echo "readme-walk: $root/.deps/go.work missing: run 'make setup' first" >&2
	exit 1
}
mkdir "$clone/.deps"
for d in "$root"/.deps/*; do
	[[ "$(basename "$d")" == go.work ]] || ln -s "$(readlink -f "$d")" "$clone/.deps/$(basename "$d")"
done
gotch="$(sed -n 's/^replace github.com\/sugarme\/gotch [^ ]* => *//p' "$root/.deps/go.work")"
[[ "$gotch" == /* ]] || gotch="$root/.deps/$gotch"
printf 'go %s\n\nuse ..\n\nreplace github.com/sugarme/gotch v0.9.1 => %s\n' \
	"$(sed -n 's/^go //p' "$root/.deps/go.work")" "$gotch" >"$clone/.deps/go.work"

cd "$clone"
export PATH="$clone/bin:$PATH"
set -a
# shellcheck source=readme-walk.env
source "$envfile"
set +a

total=$SECONDS
step() { # step N KIND COMMAND: runs COMMAND in the current folder, timed, log kept
	local n=$1 kind=$2 cmd=$3 t0=$SECONDS log="$work/log/$1.log"
	mkdir -p "$work/log"
	if bash -euo pipefail -c "$cmd" >"$log" 2>&1; then
		printf 'readme-walk: %3d %-8s %4d s  %s\n' "$n" "$kind" $((SECONDS - t0)) "$cmd"
	else
		printf 'readme-walk: %3d FAILED   %4d s  %s\n' "$n" $((SECONDS - t0)) "$cmd" >&2
		tail -n 40 "$log" >&2
		exit 1
	fi
}

# The binary first: every later step uses it (README's own `make build` is a step below too).
step 0 build "make -s -o torch build"
i=0
for c in "${cmds[@]}"; do
	i=$((i + 1))
	a="${action[$c]}"
	case "$a" in
	run) step "$i" run "$c" ;;
	"as: "*) step "$i" smoke "${a#as: }" ;;
	"skip: "*) printf 'readme-walk: %3d skipped         %s\n%24s because: %s\n' "$i" "$c" "" "${a#skip: }" ;;
	esac
done

# From elsewhere: the binary finds the data its defaults name beside itself.
mkdir -p "$work/elsewhere"
cd "$work/elsewhere"
step $((i + 1)) away "schedrl sim --policy fgd --seeds 42 --log-dir logs"
echo "readme-walk: ${#cmds[@]} README commands walked in $((SECONDS - total)) s"
