#!/usr/bin/env bash
# Builds the Kubernetes control plane the deploy tests run (internal/testserver.StartKube):
# kube-apiserver and kube-scheduler from k8s.io/kubernetes, etcd from go.etcd.io/etcd/server/v3,
# into .deps/bin, from the Go module proxy at pinned releases. About 6.5 CPU-minutes cold.
#
# k8s.io/kubernetes points its staging modules (k8s.io/api, client-go, ...) at ./staging, which a
# module download does not have, so the scratch module that builds it replaces every one with the
# published release of the same minor. The scratch modules live in .deps/kube-build, never in the
# project's go.mod. Idempotent: binaries that report the pinned versions are kept.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="$root/.deps/bin"
work="$root/.deps/kube-build"
kube="v1.34.3"
staging="v0.34.3"
etcd="v3.6.4"
staging_modules=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
	cloud-provider cluster-bootstrap code-generator component-base component-helpers
	controller-manager cri-api cri-client csi-translation-lib dynamic-resource-allocation
	endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler
	kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver sample-cli-plugin
	sample-controller)

log() { printf '[25-kube] %s\n' "$*" >&2; }

current() {
	[[ -x "$bin/kube-apiserver" && -x "$bin/kube-scheduler" && -x "$bin/etcd" ]] || return 1
	[[ "$("$bin/kube-apiserver" --version 2>/dev/null)" == "Kubernetes $kube" ]] || return 1
	[[ "$("$bin/kube-scheduler" --version 2>/dev/null)" == "Kubernetes $kube" ]] || return 1
	# Read the whole answer before matching: `etcd --version | grep -q` under pipefail fails
	# whenever grep exits first and etcd dies of SIGPIPE writing its next line.
	local answer
	answer="$("$bin/etcd" --version 2>/dev/null)" || return 1
	grep -qx "etcd Version: ${etcd#v}" <<<"$answer"
}

if current; then
	log "kube-apiserver, kube-scheduler $kube and etcd $etcd already in $bin"
	exit 0
fi
mkdir -p "$bin" "$work/k8s" "$work/etcd"
start=$SECONDS

# Outside the project's module: GOWORK=off, and each scratch module has its own go.mod.
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0

{
	echo "module schedrl.local/kube-build"
	echo
	echo "go 1.24.0"
	echo
	echo "require k8s.io/kubernetes $kube"
	echo
	for m in "${staging_modules[@]}"; do
		echo "replace k8s.io/$m => k8s.io/$m $staging"
	done
} >"$work/k8s/go.mod"
version_flags="-X k8s.io/component-base/version.gitVersion=$kube"
version_flags+=" -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34"
version_flags+=" -X k8s.io/component-base/version.gitTreeState=clean"
log "building kube-apiserver and kube-scheduler $kube (several minutes)"
for cmd in kube-apiserver kube-scheduler; do
	(cd "$work/k8s" && go build -trimpath -ldflags "-s -w $version_flags" \
		-o "$bin/.$cmd.tmp" "k8s.io/kubernetes/cmd/$cmd")
	mv "$bin/.$cmd.tmp" "$bin/$cmd"
done

# etcd's own main package lives in the root module go.etcd.io/etcd/v3; its whole body is
# etcdmain.Main, so the scratch module carries that one call against the pinned server module.
cat >"$work/etcd/go.mod" <<EOF
module schedrl.local/etcd-build

go 1.24.0

require go.etcd.io/etcd/server/v3 $etcd
EOF
cat >"$work/etcd/main.go" <<'EOF'
// Command etcd is etcd's server, built from go.etcd.io/etcd/server/v3 for schedrl's tests.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
EOF
log "building etcd $etcd"
(cd "$work/etcd" && go build -trimpath -ldflags "-s -w" -o "$bin/.etcd.tmp" .)
mv "$bin/.etcd.tmp" "$bin/etcd"

current || { log "error: the built binaries do not report $kube / $etcd"; exit 1; }
log "installed kube-apiserver, kube-scheduler $kube and etcd $etcd in $bin ($((SECONDS - start))s)"
