# schedrl: `make pipeline` runs the main job, `make test` everything CI checks.
# Packages that link libtorch build through the generated .deps/go.work (patched gotch copy);
# everything else also builds and tests as plain `CGO_ENABLED=0 go test`.
#
#   make CUDA=1 ...           link gotch's CUDA variant (needs LIBTORCH=/path/to/cuda/libtorch)
#   make LIBTORCH=/path ...   use an existing libtorch 2.1.x instead of the PyPI wheel's

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

GO ?= go
CUDA ?= 0
CONFIG ?= configs/default.yaml
export CUDA
# Only a LIBTORCH the user gave is passed on: the setup treats it as an override.
ifdef LIBTORCH
export LIBTORCH
endif

DEPS := $(CURDIR)/.deps
TORCH_ENV := GOWORK=$(DEPS)/go.work CGO_ENABLED=1
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS := $(foreach v,main.revision github.com/schedrl/schedrl/pipeline.revision,-X $(v)=$(REVISION)$(if $(shell git status --porcelain --untracked-files=no 2>/dev/null),-dirty)) -X main.version=$(VERSION)

.PHONY: setup torch build image test test-nocgo test-all test-readme pipeline bench lint env clean fidelity

## setup: everything the build and tests need (scripts/setup.d/*.sh in order; idempotent)
setup:
	bash scripts/setup.sh

## torch: only libtorch and the patched gotch (what `build` needs)
torch:
	SETUP_ONLY="10 11" bash scripts/setup.sh

## build: bin/schedrl
build: torch
	$(TORCH_ENV) $(GO) build -ldflags '$(LDFLAGS)' -o bin/schedrl ./cmd/schedrl

# The image's tag is deploy/k8s/kustomization.yaml's newTag: the manifests and the image agree.
IMAGE_NAME ?= docker.io/schedrl/schedrl
IMAGE_TAG ?= $(shell sed -n 's/^ *newTag: *//p' deploy/k8s/kustomization.yaml)$(if $(filter 1,$(CUDA)),-cuda)

## image: dist/schedrl-image.oci.tar, schedrl's OCI image (docs/deploy.md); its digest is the
## last line. PUSH=REF also pushes it. The same commit gives the same digest from any checkout
## path: -trimpath, -s -w; -tags libtorch_origin, which links the runpath $ORIGIN/../lib
## instead of this checkout's libtorch (scripts/setup.d/11-gotch.sh); and -buildid= because Go's
## build ID hashes cgo's flags, which hold the checkout's path (golang/go#77086).
## scripts/image-repro.sh checks it with two clones.
image: torch
	$(TORCH_ENV) $(GO) build -trimpath -tags libtorch_origin -ldflags '-s -w -buildid= $(LDFLAGS)' -o dist/image/schedrl ./cmd/schedrl
	CGO_ENABLED=0 GOWORK=off $(GO) run ./scripts/image --binary dist/image/schedrl \
		--libtorch '$(or $(LIBTORCH),$(DEPS)/libtorch)' \
		--out dist/schedrl-image.oci.tar --name '$(IMAGE_NAME):$(IMAGE_TAG)' \
		--epoch "$$(git log -1 --format=%ct)" --version '$(VERSION)' --revision '$(REVISION)' \
		$(if $(PUSH),--push '$(PUSH)')

# The project's packages (scripts/packages.sh): ./... less git-ignored scratch folders.
PKGS = $$(bash scripts/packages.sh all)
NOCGO_PKGS = $$(bash scripts/packages.sh nocgo)

## test: setup, the package boundary, the no-cgo packages with CGO_ENABLED=0, then all tests
## (-k: both test runs go on after a failure, so one CI log shows every failing package), and
## last the README walk. A package's tests may take longer than go test's default 10 minutes on
## a loaded machine (cmd/schedrl starts real servers and a node and runs smoke pipelines): TEST_TIMEOUT.
TEST_TIMEOUT ?= 60m
test: setup
	bash scripts/packages.sh check
	$(MAKE) --no-print-directory -k test-nocgo test-all
	$(MAKE) --no-print-directory test-readme

test-nocgo:
	CGO_ENABLED=0 GOWORK=off $(GO) test -timeout $(TEST_TIMEOUT) $(NOCGO_PKGS)

test-all:
	$(TORCH_ENV) $(GO) test -timeout $(TEST_TIMEOUT) $(PKGS)

## test-readme: every command of README.md, in order, in a fresh clone of HEAD (committed work
## only), at smoke size or skipped with a reason (scripts/readme-walk.sh, docs/readme-walk.md)
test-readme: setup
	bash scripts/readme-walk.sh

## pipeline: the main job, with $(CONFIG)
pipeline: build
	bin/schedrl doctor
	bin/schedrl pipeline run --config $(CONFIG) $(PIPELINE_FLAGS)

## bench: Go benchmarks of every package, then scripts/bench.d/*.sh
bench: torch
	$(TORCH_ENV) $(GO) test -run '^$$' -bench . -benchmem $(PKGS)
	for f in scripts/bench.d/*.sh; do [[ -e "$$f" ]] || continue; echo "== $$f"; bash "$$f"; done

## fidelity: simulator + heuristics vs the FGD paper's table (6 policies x seeds 42..51)
fidelity:
	CGO_ENABLED=0 GOWORK=off $(GO) run ./scripts/fidelity

## lint: gofmt, go vet (with and without cgo), the package boundary
lint: torch
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [[ -n "$$out" ]]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(TORCH_ENV) $(GO) vet $(PKGS)
	CGO_ENABLED=0 GOWORK=off $(GO) vet $(NOCGO_PKGS)
	bash scripts/packages.sh check
	SETUP_ONLY=50 bash scripts/setup.sh && .deps/bin/actionlint .github/workflows/*.yml

## env: the environment for running go commands on libtorch packages by hand
env:
	@bash scripts/goenv.sh

clean:
	rm -rf bin dist
