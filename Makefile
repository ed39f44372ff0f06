# fashiond — see README.md. `make run` and `make test` do all set-up themselves.
SHELL := /bin/bash
export GOFLAGS ?= -mod=mod
ORT_LIB ?= $(CURDIR)/.deps/onnxruntime/1.30.0/libonnxruntime.so.1
export FASHIOND_ORT_LIB ?= $(ORT_LIB)
export FASHIOND_MODELS_DIR ?= $(CURDIR)/data/models
GO ?= go

.PHONY: chaos all setup setup-system setup-ort setup-models setup-presets setup-contract-models build run test vet fmt bench clean

all: build

setup: setup-system setup-ort setup-models setup-presets setup-contract-models
	@./scripts/setup-s3-test.sh
	@./scripts/setup-chromium.sh

setup-system:
	@./scripts/setup-system.sh

setup-ort:
	@./scripts/setup-ort.sh

setup-models:
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
run: setup build
	FASHIOND_API_KEYS="$${FASHIOND_API_KEYS:-dev-local-key:1000}" ./bin/fashiond serve

test: setup
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 40m ./...
	$(GO) test -race -count=1 -timeout 20m ./diffusion/... ./inference/ ./api/

# Fault injection: SIGKILLed workers, a killed and restarted redis-server,
# slow and large bodies (see docs/OPERATIONS.md). Not part of `make test`.
chaos: setup
	FASHIOND_CHAOS=long $(GO) test -v -count=1 -timeout 900s -run 'TestChaos|TestAbuse' ./jobs ./api

bench: setup build
	./bin/fashiond bench

fmt:
	gofmt -w $$(git ls-files '*.go')

clean:
	rm -rf bin
