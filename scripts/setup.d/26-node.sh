#!/usr/bin/env bash
# Builds what a Kubernetes node of the test cluster runs (internal/testserver, docs/deploy.md
# "Test node") into .deps/node/bin, from the Go module proxy at pinned releases:
#   kubelet, kube-controller-manager, kube-proxy  k8s.io/kubernetes (the API server's release,
#                                                 staging modules replaced as in 25-kube.sh)
#   containerd, containerd-shim-runc-v2, ctr      github.com/containerd/containerd/v2 (2.1: the
#                                                 last minor that Kubernetes 1.34 lists with
#                                                 cgroup v1 support)
#   runc                                          github.com/opencontainers/runc (cgo: nsenter)
#   CNI plugins bridge, host-local, loopback      github.com/containernetworking/plugins
# Several CPU-minutes cold; nice'd. Idempotent: a stamp file records the pinned versions and
# every binary must be present, else the set is rebuilt.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
node="$root/.deps/node"
bin="$node/bin"
work="$node/build"
kube="v1.34.3"
staging="v0.34.3"
containerd="v2.1.9"
runc="v1.3.7"
cni="v1.9.0"
stamp="kube=$kube containerd=$containerd runc=$runc cni=$cni"
binaries=(kubelet kube-controller-manager kube-proxy containerd containerd-shim-runc-v2 ctr runc
	cni/bridge cni/host-local cni/loopback)
staging_modules=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
	cloud-provider cluster-bootstrap code-generator component-base component-helpers
	controller-manager cri-api cri-client csi-translation-lib dynamic-resource-allocation
	endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler
	kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver sample-cli-plugin
	sample-controller)

log() { printf '[26-node] %s\n' "$*" >&2; }

current() {
	[[ -f "$bin/.stamp" && "$(cat "$bin/.stamp")" == "$stamp" ]] || return 1
	local b
	for b in "${binaries[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
}

if current; then
	log "node binaries ($stamp) already in $bin"
	exit 0
fi
mkdir -p "$bin/cni" "$work/k8s" "$work/containerd" "$work/runc" "$work/cni"
start=$SECONDS
export GOWORK=off GOFLAGS=-mod=mod

# build DIR OUT PKG [go build flags...]: one binary, written under a temporary name first.
build() {
	local dir="$1" out="$2" pkg="$3"
	shift 3
	log "building $(basename "$out")"
	(cd "$dir" && nice -n 10 go build -trimpath "$@" -o "$out.tmp" "$pkg")
	mv "$out.tmp" "$out"
}

{
	echo "module schedrl.local/node-build"
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
for cmd in kubelet kube-controller-manager kube-proxy; do
	CGO_ENABLED=0 build "$work/k8s" "$bin/$cmd" "k8s.io/kubernetes/cmd/$cmd" -ldflags "-s -w $version_flags"
done

printf 'module schedrl.local/containerd-build\n\ngo 1.24.0\n\nrequire github.com/containerd/containerd/v2 %s\n' \
	"$containerd" >"$work/containerd/go.mod"
# No btrfs/devmapper snapshotters (cgo, unused here): the static overlayfs build.
ctr_flags="-X github.com/containerd/containerd/v2/version.Version=$containerd"
for cmd in containerd containerd-shim-runc-v2 ctr; do
	CGO_ENABLED=0 build "$work/containerd" "$bin/$cmd" "github.com/containerd/containerd/v2/cmd/$cmd" \
		-tags "no_btrfs no_devmapper no_zfs" -ldflags "-s -w $ctr_flags"
done

printf 'module schedrl.local/runc-build\n\ngo 1.24.0\n\nrequire github.com/opencontainers/runc %s\n' \
	"$runc" >"$work/runc/go.mod"
# runc's nsenter is C (cgo); no seccomp tag: pods here run Unconfined, and libseccomp-dev is
# not needed.
CGO_ENABLED=1 build "$work/runc" "$bin/runc" github.com/opencontainers/runc \
	-ldflags "-s -w -X main.version=${runc#v}"

printf 'module schedrl.local/cni-build\n\ngo 1.24.0\n\nrequire github.com/containernetworking/plugins %s\n' \
	"$cni" >"$work/cni/go.mod"
for p in main/bridge ipam/host-local main/loopback; do
	CGO_ENABLED=0 build "$work/cni" "$bin/cni/$(basename "$p")" \
		"github.com/containernetworking/plugins/plugins/$p" -ldflags "-s -w"
done

echo "$stamp" >"$bin/.stamp"
current || { log "error: not every node binary was built"; exit 1; }
log "installed $stamp in $bin ($((SECONDS - start))s)"
