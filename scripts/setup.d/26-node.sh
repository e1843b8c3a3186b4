#!/usr/bin/env bash
# Builds what a Kubernetes node of the test cluster runs (internal/testserver, docs/deploy.md
# "Test node") into .deps/node/bin, from the Go module proxy at pinned releases:
#   kubelet, kube-controller-manager, kube-proxy  k8s.io/kubernetes (the API server's release,
#                                                 staging modules replaced as in 25-kube.sh)
#   containerd, containerd-shim-runc-v2, ctr      github.com/containerd/containerd/v2 (2.1: the
#                                                 last minor that Kubernetes 1.34 lists with
#                                                 cgroup v1 support)
#   runc                                          github.com/opencontainers/runc (cgo: nsenter;
#                                                 seccomp: Debian's libseccomp-dev)
#   CNI plugins bridge, host-local, loopback      github.com/containernetworking/plugins
# Several CPU-minutes cold; nice'd. Idempotent: a stamp file per component records what was
# built; a component whose stamp differs or whose binaries are missing is rebuilt.
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
declare -A stamps=([kube]="$kube" [containerd]="$containerd" [runc]="$runc seccomp" [cni]="$cni")
declare -A binaries=([kube]="kubelet kube-controller-manager kube-proxy"
	[containerd]="containerd containerd-shim-runc-v2 ctr" [runc]="runc"
	[cni]="cni/bridge cni/host-local cni/loopback")
staging_modules=(api apiextensions-apiserver apimachinery apiserver cli-runtime client-go
	cloud-provider cluster-bootstrap code-generator component-base component-helpers
	controller-manager cri-api cri-client csi-translation-lib dynamic-resource-allocation
	endpointslice externaljwt kms kube-aggregator kube-controller-manager kube-proxy kube-scheduler
	kubectl kubelet metrics mount-utils pod-security-admission sample-apiserver sample-cli-plugin
	sample-controller)

log() { printf '[26-node] %s\n' "$*" >&2; }

# current COMPONENT: its stamp matches and its binaries are there.
current() {
	[[ -f "$bin/.stamp-$1" && "$(cat "$bin/.stamp-$1")" == "${stamps[$1]}" ]] || return 1
	local b
	for b in ${binaries[$1]}; do [[ -x "$bin/$b" ]] || return 1; done
}

# Debian's tools the node runs: ip (its network namespace and veth pair), nsenter (processes in
# it), iptables (kube-proxy's rules and the CNI bridge's masquerade). Checked on every run: a
# machine set up before the node needed them has the binaries but maybe not these.
missing=()
for t in ip:iproute2 nsenter:util-linux iptables:iptables; do
	PATH="$PATH:/usr/sbin:/sbin" command -v "${t%%:*}" >/dev/null 2>&1 || missing+=("${t#*:}")
done
if [[ ${#missing[@]} -gt 0 ]]; then
	log "installing ${missing[*]} (Debian) for the test node"
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

todo=()
for c in kube containerd runc cni; do current "$c" || todo+=("$c"); done
if [[ ${#todo[@]} -eq 0 ]]; then
	log "node binaries (kube $kube, containerd $containerd, runc $runc, CNI $cni) already in $bin"
	exit 0
fi
wanted() { [[ " ${todo[*]} " == *" $1 "* ]]; }
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

if wanted kube; then
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
echo "${stamps[kube]}" >"$bin/.stamp-kube"
fi

if wanted containerd; then
printf 'module schedrl.local/containerd-build\n\ngo 1.24.0\n\nrequire github.com/containerd/containerd/v2 %s\n' \
	"$containerd" >"$work/containerd/go.mod"
# No btrfs/devmapper snapshotters (cgo, unused here): the static overlayfs build.
ctr_flags="-X github.com/containerd/containerd/v2/version.Version=$containerd"
for cmd in containerd containerd-shim-runc-v2 ctr; do
	CGO_ENABLED=0 build "$work/containerd" "$bin/$cmd" "github.com/containerd/containerd/v2/cmd/$cmd" \
		-tags "no_btrfs no_devmapper no_zfs" -ldflags "-s -w $ctr_flags"
done
echo "${stamps[containerd]}" >"$bin/.stamp-containerd"
fi

if wanted runc; then
# With seccomp: containerd gives every pod sandbox the RuntimeDefault profile, which a runc
# without it refuses ("config provided but seccomp not supported").
if ! pkg-config --exists libseccomp 2>/dev/null; then
	log "installing libseccomp-dev and pkg-config (Debian) for runc's seccomp support"
	apt-get install -y -qq libseccomp-dev pkg-config >/dev/null
fi
printf 'module schedrl.local/runc-build\n\ngo 1.24.0\n\nrequire github.com/opencontainers/runc %s\n' \
	"$runc" >"$work/runc/go.mod"
CGO_ENABLED=1 build "$work/runc" "$bin/runc" github.com/opencontainers/runc -tags seccomp \
	-ldflags "-s -w -X main.version=${runc#v}"
echo "${stamps[runc]}" >"$bin/.stamp-runc"
fi

if wanted cni; then
printf 'module schedrl.local/cni-build\n\ngo 1.24.0\n\nrequire github.com/containernetworking/plugins %s\n' \
	"$cni" >"$work/cni/go.mod"
for p in main/bridge ipam/host-local main/loopback; do
	CGO_ENABLED=0 build "$work/cni" "$bin/cni/$(basename "$p")" \
		"github.com/containernetworking/plugins/plugins/$p" -ldflags "-s -w"
done
echo "${stamps[cni]}" >"$bin/.stamp-cni"
fi

for c in kube containerd runc cni; do
	current "$c" || { log "error: $c was not built"; exit 1; }
done
log "installed ${todo[*]} in $bin ($((SECONDS - start))s)"
