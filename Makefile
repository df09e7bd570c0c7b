# chainvol: build, test and try the CSI driver. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
VERSITYGW_VERSION := v1.8.0
APT_PACKAGES := xfsprogs e2fsprogs util-linux mount btrfs-progs
# Unit tests run under the race detector; the sanity and e2e suites drive
# real loop devices and mounts and need root.
UNIT_PKGS := ./pkg/... ./internal/... ./cmd/... ./deploy/...

.PHONY: help build test unit sanity e2e bench lint deps demo image clean

help: ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## build chainvol-csi and chainvolctl into bin/
	$(GO) build -o $(BIN)/ ./cmd/...

test: deps build unit sanity e2e ## everything CI runs (installs what it needs first)

unit: ## unit tests (race detector on)
	$(GO) test -race -count=1 $(UNIT_PKGS)

sanity: ## CSI sanity suite, filesystem and block (root)
	$(GO) test -count=1 -timeout 30m ./test/sanity/...

e2e: ## end-to-end tests and the CLI: real mounts, real S3 (root)
	$(GO) test -count=1 -timeout 30m ./test/e2e/... ./test/cli/...

# BENCH_FLAGS passes flags to the bench program, e.g. BENCH_FLAGS='-size 1GiB -rounds 3'.
bench: deps build bench-deps ## chainvol vs restic vs the machine's limit, table + bench/results/latest.json (root, ~10 min)
	$(GO) build -o $(BIN)/chainvol-bench ./bench
	$(BIN)/chainvol-bench $(BENCH_FLAGS)

.PHONY: bench-deps
bench-deps: ## install restic (Debian's package), the baseline of make bench
	@command -v restic >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq restic; }

lint: ## gofmt and go vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

deps: ## install what the tests need (Debian packages, versitygw); idempotent
	@if ! dpkg -s $(APT_PACKAGES) >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES); fi
	@# go install leaves no version in the binary, so a stamp file records it.
	@if [ ! -x $(BIN)/versitygw ] || [ ! -f $(BIN)/.versitygw-$(VERSITYGW_VERSION) ]; then \
	  GOBIN=$(BIN) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION) && \
	  touch $(BIN)/.versitygw-$(VERSITYGW_VERSION); fi

demo: deps build ## the main job: backup then restore through the driver's socket
	bash hack/demo.sh

image: ## container image (needs a Docker engine)
	bash deploy/build-image.sh

clean:
	rm -rf $(BIN)

.PHONY: e2e-cluster
e2e-cluster: ## chainvol under a real one-node Kubernetes, built from Go modules (root; opt-in, ~20 min cold)
	@if ! dpkg -s $(APT_PACKAGES) etcd-server containerd runc containernetworking-plugins debootstrap iproute2 openssl jq >/dev/null 2>&1; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(APT_PACKAGES) \
	    etcd-server containerd runc containernetworking-plugins debootstrap iproute2 openssl jq; fi
	bash test/cluster/e2e.sh
