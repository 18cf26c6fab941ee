# hookrun — developer commands. `make help` lists them.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

GO          ?= go
GOBIN       := $(shell $(GO) env GOPATH)/bin
STATICCHECK := $(GOBIN)/staticcheck
STATICCHECK_VERSION := v0.8.2
BIN         := bin/hookrun
VERSION     ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -s -w -X main.version=$(VERSION)
FUZZTIME    ?= 10s
TEST_IMAGE  := hookrun-test-busybox:latest

.PHONY: help
help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## build bin/hookrun and bin/hookrun-step-init, the init of isolated host steps (static, CGO off)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/hookrun
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '-s -w' -o bin/hookrun-step-init ./cmd/hookrun-step-init

.PHONY: run
run: build ## start `hookrun serve` on examples/ with an embedded NATS and print a signed curl to try
	@./scripts/dev-run.sh

.PHONY: tools
tools: ## install the tools the checks need (staticcheck, busybox-static)
	@test -x $(STATICCHECK) || { echo "installing staticcheck $(STATICCHECK_VERSION)"; GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); }
	@test -x /bin/busybox || { echo "installing busybox-static (for the local Docker test image)"; \
		{ apt-get install -y -q busybox-static >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q busybox-static >/dev/null; }; } \
		|| echo "WARNING: could not install busybox-static; Docker tests will fail to build their image"; }

.PHONY: ui-tools
ui-tools: ## install Debian's chromium for the web UI's browser test (TestUIBrowser) when it is missing
	@command -v chromium >/dev/null || { echo "installing chromium (for the web UI's browser test)"; \
		{ apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }; } \
		|| echo "!!! WARNING: could not install chromium; TestUIBrowser will SKIP !!!"; }

.PHONY: screenshots
screenshots: ui-tools ## regenerate docs/img/ui-*.png: TestUIBrowser drives a real `hookrun serve` in headless Chromium
	HOOKRUN_UI_SCREENSHOTS=$(CURDIR)/docs/img $(GO) test -count=1 -run '^TestUIBrowser$$' -v ./cmd/hookrun

.PHONY: test-image
test-image: tools ## build the local Docker test image (no registry needed) when it is missing
	@if ! docker info >/dev/null 2>&1; then \
		echo "!!! WARNING: no Docker daemon reachable: the Docker executor tests will SKIP !!!"; \
	else $(GO) run ./providers/docker/internal/testimage -image $(TEST_IMAGE); fi

.PHONY: vet
vet: tools ## go vet, staticcheck and gofmt
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags compose ./cmd/hookrun
	$(STATICCHECK) ./...
	$(STATICCHECK) -tags compose ./cmd/hookrun

.PHONY: test
test: vet test-image ui-tools ## vet, staticcheck, all tests with -race (NATS, Docker and headless Chromium integration included), brief fuzzing
	$(GO) test -race -count=1 -timeout 9m ./...
	$(MAKE) --no-print-directory fuzz
	@left=$$(docker ps -aq --filter label=hookrun.run 2>/dev/null || true); \
		if [ -n "$$left" ]; then echo "containers labelled hookrun.run were left behind: $$left"; exit 1; fi

.PHONY: compose-images
compose-images: tools ## build docker-compose.yml's two images locally, no registry (hookrun-local, hookrun-nats-local)
	$(GO) run ./internal/localimage/composeimages

.PHONY: compose-test
compose-test: test-image ## docker-compose.yml up with local images: deliveries while a runner and a NATS node are killed (under 4 min warm)
	$(GO) test -tags compose -count=1 -timeout 8m -run '^TestComposeUp$$' -v ./cmd/hookrun
	@left=$$(docker ps -aq --filter label=hookrun.run 2>/dev/null || true); \
		if [ -n "$$left" ]; then echo "containers labelled hookrun.run were left behind: $$left"; exit 1; fi

.PHONY: fuzz
fuzz: ## run each fuzz target briefly (FUZZTIME=10s)
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./workflows
	$(GO) test -run '^$$' -fuzz '^FuzzNormalizeGitHub$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./providers/github
	$(GO) test -run '^$$' -fuzz '^FuzzNormalizeGitLab$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./providers/gitlab
	$(GO) test -run '^$$' -fuzz '^FuzzGitHubProjection$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1s ./providers/github

.PHONY: bench
bench: build ## measure ingest, dispatch, engine overhead and memory against their floors (under 3 min; docs/performance.md)
	./$(BIN) bench

.PHONY: bench-records
bench-records: ## 100,000 run records: list p99 < 50 ms, run start vs 0 records, index memory (about 1 min; docs/performance.md)
	$(GO) test ./queue -run '^$$' -bench '^BenchmarkRunRecords100k$$' -benchtime 1x

.PHONY: validate
validate: build ## validate the example workflows
	./$(BIN) validate examples/

.PHONY: clean
clean: ## remove build outputs and the dev data dir
	rm -rf bin .hookrun
