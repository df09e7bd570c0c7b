# chainvol: build, test and try the CSI driver. `make help` lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
VERSITYGW_VERSION := v1.8.0
# The peer of make bench: the newest restic, built from its Go module.
RESTIC_VERSION := v0.18.1
# The one version of a build (hack/version.sh, from git describe): every
# binary's -version, GetPluginInfo and chainvol_build_info (pkg/version),
# the image tag, the chart's appVersion and the kustomize overlays of make
# image; e.g. v0.3.0, v0.3.0-4-gabc1234, 0.0.0-dev+abc1234-dirty.
VERSION ?= $(shell bash hack/version.sh)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS := -s -w -X github.com/chainvol/chainvol/pkg/version.tag=$(VERSION) -X github.com/chainvol/chainvol/pkg/version.commit=$(COMMIT)
# The image `make image` builds (no container engine needed): its tag is
# VERSION with "+" as "_" (tags cannot hold "+"); the tarball, OCI layout,
# kustomize overlays and stamped chart go to IMAGE_DIR.
IMAGE_REPO ?= ghcr.io/chainvol/chainvol-csi
IMAGE_TAG ?= $(subst +,_,$(VERSION))
IMAGE_DIR := $(BIN)/image
IMAGE_BASE := $(IMAGE_DIR)/base-bookworm.tar
APT_PACKAGES := xfsprogs e2fsprogs util-linux mount btrfs-progs
# test/cli's TestBackupServeBrowser drives `backup serve` in headless Chromium;
# installed without its recommends (udev, avahi, printing).
BROWSER_PACKAGES := chromium
CLUSTER_PACKAGES := etcd-server containerd runc containernetworking-plugins debootstrap iproute2 openssl jq
# Unit tests run under the race detector; the sanity and e2e suites drive
# real loop devices and mounts and need root.
UNIT_PKGS := ./pkg/... ./internal/... ./cmd/... ./deploy/... ./charts/... ./hack/...
# Each suite prints `go test -json`; bin/testreport (hack/testreport) turns it
# into a line per package, failing tests' output, Ginkgo's per-run counts, a
# progress line every 30 s and the verdict "NAME: N passed, N failed, N skipped".
REPORT := $(BIN)/testreport
UNIT_CMD := $(GO) test -json -race -count=1 -timeout 30m $(UNIT_PKGS)
SANITY_CMD := $(GO) test -json -count=1 -timeout 30m ./test/sanity/...
E2E_CMD := $(GO) test -json -count=1 -timeout 30m ./test/e2e/... ./test/cli/...

.PHONY: help build test unit sanity e2e bench bench-deps lint deps demo demo-s3 image image-docker clean e2e-cluster e2e-k8s-storage verify-protocol

help: ## list targets with what they do
	@awk -F':.*## ' '/^[a-z0-9-]+:.*## / { name[++n] = $$1; text[n] = $$2; if (length($$1) > w) w = length($$1) } \
	  END { for (i = 1; i <= n; i++) printf "  %-" w "s  %s\n", name[i], text[i] }' $(MAKEFILE_LIST)

build: ## build chainvol-csi and chainvolctl into bin/ (static, version from git describe)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

test: deps build $(REPORT) ## everything CI runs: unit, sanity and e2e (root); ends with "test: N passed, N failed, N skipped"
	$(REPORT) -total test -suite 'unit=$(UNIT_CMD)' -suite 'sanity=$(SANITY_CMD)' -suite 'e2e=$(E2E_CMD)'

unit: $(REPORT) ## unit tests (race detector on)
	$(REPORT) -suite 'unit=$(UNIT_CMD)'

sanity: $(REPORT) ## CSI sanity suite, filesystem and block, local and S3 snapshots (root)
	$(REPORT) -suite 'sanity=$(SANITY_CMD)'

e2e: $(REPORT) ## end-to-end tests and the CLI: real mounts, real S3 (root)
	$(REPORT) -suite 'e2e=$(E2E_CMD)'

$(REPORT): $(wildcard hack/testreport/*.go)
	$(GO) build -o $@ ./hack/testreport

# BENCH_FLAGS passes flags to the bench program, e.g. BENCH_FLAGS='-size 1GiB -rounds 3'.
bench: deps build bench-deps ## chainvol vs restic 0.18.1 vs the machine's limit: the goal table of issue 16 + bench/results/latest.json (root, ~12 min)
	$(GO) build -o $(BIN)/chainvol-bench ./bench
	$(BIN)/chainvol-bench $(BENCH_FLAGS)

bench-deps: ## build restic (RESTIC_VERSION, v0.18.1) from its Go module into bin/, the peer of make bench
	@# go install leaves no version in the path, so a stamp file records it.
	@if [ ! -x $(BIN)/restic ] || [ ! -f $(BIN)/.restic-$(RESTIC_VERSION) ]; then \
	  GOBIN=$(BIN) CGO_ENABLED=0 $(GO) install github.com/restic/restic/cmd/restic@$(RESTIC_VERSION) && \
	  touch $(BIN)/.restic-$(RESTIC_VERSION); fi

verify-protocol: ## model-check the chain protocol in the wide scope: v2's defects found, v3 safe (docs/PROTOCOL-MODEL.md)
	CHAINVOL_MODEL_LONG=1 $(GO) test -count=1 -v -timeout 90m ./pkg/s3chain/protomodel

lint: ## gofmt and go vet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet ./...

deps: ## install what the tests need (missing Debian packages only, versitygw); idempotent
	@bash hack/apt-install.sh $(APT_PACKAGES)
	@bash hack/apt-install.sh --no-install-recommends $(BROWSER_PACKAGES)
	@# go install leaves no version in the binary, so a stamp file records it.
	@if [ ! -x $(BIN)/versitygw ] || [ ! -f $(BIN)/.versitygw-$(VERSITYGW_VERSION) ]; then \
	  GOBIN=$(BIN) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION) && \
	  touch $(BIN)/.versitygw-$(VERSITYGW_VERSION); fi

demo: deps build ## the main job: backup then restore through the driver's socket
	bash hack/demo.sh

demo-s3: deps build ## docs/operator.md "Try it on S3 in five minutes" as written: versitygw on loopback, target init, full + incremental backup, restore compared (no root)
	bash hack/demo-s3.sh

image: build ## node-plugin image without a container engine, then prints how to import and install it (root, Debian base cached)
	@bash hack/apt-install.sh debootstrap
	bash hack/image-base.sh $(IMAGE_BASE)
	$(GO) run ./hack/image -base $(IMAGE_BASE) -bin $(BIN)/chainvol-csi -bin $(BIN)/chainvolctl -bin $(BIN)/chainvol-populator \
	  -tag $(IMAGE_REPO):$(IMAGE_TAG) -version "$(VERSION)" -commit "$(COMMIT)" \
	  -out $(IMAGE_DIR)/chainvol-csi-$(IMAGE_TAG).tar -layout $(IMAGE_DIR)/oci
	$(GO) run ./hack/image -check $(IMAGE_DIR)/chainvol-csi-$(IMAGE_TAG).tar -tag $(IMAGE_REPO):$(IMAGE_TAG) -version $(VERSION)
	@echo "$(IMAGE_REPO):$(IMAGE_TAG) $(IMAGE_DIR)/chainvol-csi-$(IMAGE_TAG).tar" > $(IMAGE_DIR)/last-build
	@$(GO) run ./hack/imagedeploy -image $(IMAGE_REPO):$(IMAGE_TAG) -version "$(VERSION)" \
	  -tar $(IMAGE_DIR)/chainvol-csi-$(IMAGE_TAG).tar -out $(IMAGE_DIR)

image-docker: ## the same image from the Dockerfile, with a Docker engine (skips without one)
	IMAGE=$(IMAGE_REPO):$(IMAGE_TAG) VERSION=$(VERSION) COMMIT=$(COMMIT) bash deploy/build-image.sh

clean: ## remove bin/ (not the e2e-cluster cache, see test/cluster/README.md)
	rm -rf $(BIN)

e2e-cluster: deps ## a real one-node Kubernetes runs chainvol (root; opt-in; cold ~42 min, warm under 6 min; ~25 GB free disk)
	@bash hack/apt-install.sh $(APT_PACKAGES) $(CLUSTER_PACKAGES)
	bash test/cluster/e2e.sh

e2e-k8s-storage: deps ## Kubernetes' own storage e2e suite (e2e.test External Storage) against chainvol on that cluster (root; opt-in; warm ~22 min; cold: e2e-cluster's cold build + ~7 min)
	@bash hack/apt-install.sh $(APT_PACKAGES) $(CLUSTER_PACKAGES)
	bash test/cluster/k8s-storage.sh
