# fashiond — see README.md. `make run` and `make test` do all set-up themselves.
SHELL := /bin/bash
export GOFLAGS ?= -mod=mod
ORT_LIB ?= $(CURDIR)/.deps/onnxruntime/1.30.0/libonnxruntime.so.1
export FASHIOND_ORT_LIB ?= $(ORT_LIB)
export FASHIOND_MODELS_DIR ?= $(if $(FASHIOND_DATA_DIR),$(FASHIOND_DATA_DIR),$(CURDIR)/data)/models
GO ?= go

.PHONY: chaos all setup setup-serve setup-test setup-system setup-ort setup-gpu setup-models setup-presets setup-contract-models build run test vet fmt bench clean

all: build

# Set-up is split in two, each step idempotent and quiet when there is
# nothing to do: setup-serve installs what serving needs (`make run`):
# system packages, ONNX Runtime, the models, the preset photos;
# setup-test adds what only the tests need (`make test`): the contract
# models, the S3 test server (versitygw), headless Chromium and
# redis-sentinel. `make setup` does both.
setup: setup-serve setup-test

# Without ../shared beside the checkout (a clean clone) the models come from
# their origins (setup-models, docs/ORIGINS.md); the preset photos exist
# only in ../shared/testdata, so that step is then skipped with a warning
# unless FASHIOND_PRESETS_SRC is set. On a node with an NVIDIA driver the
# GPU runtime is installed too (setup-gpu, docs/GPU.md).
setup-serve: setup-system setup-ort setup-models
	@if [ -e /proc/driver/nvidia/version ] || command -v nvidia-smi >/dev/null 2>&1; then ./scripts/setup-gpu.sh; fi
	@if [ -d ../shared/testdata ] || [ -n "$${FASHIOND_PRESETS_SRC:-}" ]; then ./scripts/setup-presets.sh; \
	else echo "setup: warning: no ../shared/testdata: preset photos not installed (they have no public origin; product-to-model and model-create are not served)" >&2; fi

# The contract models' CLIP vocabulary exists only in ../shared/testdata
# (or FASHIOND_CLIP_BPE); without it that step is skipped with a warning.
setup-test: setup-serve
	@if [ -d ../shared/testdata ] || [ -n "$${FASHIOND_CLIP_BPE:-}" ]; then ./scripts/setup-contract-models.sh; \
	else echo "setup: warning: no ../shared/testdata: contract models not built (the diffusion tests skip without them)" >&2; fi
	@./scripts/setup-s3-test.sh
	@./scripts/setup-chromium.sh
	@./scripts/setup-redis-sentinel.sh

setup-system:
	@./scripts/setup-system.sh

setup-ort:
	@./scripts/setup-ort.sh

# The ONNX Runtime GPU runtime (CUDA 13) from npm, beside the CPU one; `make
# setup` runs it on a node with an NVIDIA driver. docs/GPU.md.
setup-gpu:
	@./scripts/setup-gpu.sh

# From the mirror or FASHIOND_MODELS_URL (setup-models.sh); with neither, from
# the models' origins first (scripts/origins/setup-origins.sh).
setup-models:
	@./scripts/origins/setup-origins.sh
	@./scripts/setup-models.sh

setup-presets:
	@./scripts/setup-presets.sh

# Small ONNX test models for the diffusion engine (diffusion/testdata/README.md).
setup-contract-models:
	@./scripts/setup-contract-models.sh

build: setup-system
	@mkdir -p bin
	$(GO) build -o bin/fashiond ./cmd/fashiond

# `make run` provisions a development key (dev-local-key, 1000 credits) unless
# FASHIOND_API_KEYS is set; the server listens on loopback only by default.
run: setup-serve build
	FASHIOND_API_KEYS="$${FASHIOND_API_KEYS:-dev-local-key:1000}" ./bin/fashiond serve

test: setup
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 40m ./...
	$(GO) test -race -count=1 -timeout 20m ./diffusion/... ./inference/ ./api/ ./jobs/

# Fault injection: SIGKILLed workers, a killed and restarted redis-server,
# slow and large bodies (see docs/OPERATIONS.md). Not part of `make test`.
chaos: setup
	FASHIOND_CHAOS=long $(GO) test -v -count=1 -timeout 900s -run 'TestChaos|TestAbuse' ./jobs ./api

bench: setup-serve build
	./bin/fashiond bench

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
