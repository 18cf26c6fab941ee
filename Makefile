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
FUZZTIME    ?= 20000x
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
tools: ## install the tools the checks need (staticcheck, busybox-static, e2fsprogs, jq and python3)
	@test -x $(STATICCHECK) || { echo "installing staticcheck $(STATICCHECK_VERSION)"; GOFLAGS= $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); }
	@test -x /bin/busybox || { echo "installing busybox-static (for the local Docker test image)"; \
		{ apt-get install -y -q busybox-static >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q busybox-static >/dev/null; }; } \
		|| echo "WARNING: could not install busybox-static; Docker tests will fail to build their image"; }
	@command -v mkfs.ext4 >/dev/null || { echo "installing e2fsprogs (mkfs.ext4, for providers/git TestUnjournaledExt4)"; \
		{ apt-get install -y -q e2fsprogs >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q e2fsprogs >/dev/null; }; } \
		|| echo "WARNING: could not install e2fsprogs; TestUnjournaledExt4 will fail"; }
	@{ command -v jq && command -v python3; } >/dev/null || { echo "installing jq and python3 (the examples' steps, run by cmd/hookrun TestExample*)"; \
		{ apt-get install -y -q jq python3 >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q jq python3 >/dev/null; }; } \
		|| echo "WARNING: could not install jq and python3; TestExample* will fail"; }

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

GITEA_VERSION := 1.26.0
GITEA_DIR     ?= $(HOME)/.cache/hookrun/gitea-$(GITEA_VERSION)

.PHONY: gitea-test
gitea-test: ## a real Gitea 1.26 (built once into ~/.cache/hookrun, 5 to 20 min) on loopback with sqlite: reports, reviews, labels, deliveries end to end
	@if [ ! -x $(GITEA_DIR)/gitea ]; then \
		echo "building Gitea $(GITEA_VERSION) into $(GITEA_DIR) (once)"; \
		mkdir -p $(GITEA_DIR); src=$$(cd $(GITEA_DIR) && GOFLAGS= $(GO) mod download -json code.gitea.io/gitea@v$(GITEA_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$$/\1/p'); \
		test -n "$$src"; rm -rf $(GITEA_DIR)/src; cp -r "$$src" $(GITEA_DIR)/src; chmod -R u+w $(GITEA_DIR)/src; \
		(cd $(GITEA_DIR)/src && CGO_ENABLED=1 GOFLAGS= $(GO) build -tags 'sqlite sqlite_unlock_notify' -o $(GITEA_DIR)/gitea.tmp .); \
		mv $(GITEA_DIR)/gitea.tmp $(GITEA_DIR)/gitea; \
	fi
	HOOKRUN_GITEA_BIN=$(GITEA_DIR)/gitea HOOKRUN_GITEA_STATIC=$(GITEA_DIR)/src \
		$(GO) test -tags gitea -count=1 -timeout 8m -run '^TestRealGitea$$' -v ./providers/gitea

.PHONY: fuzz
fuzz: ## run each fuzz target briefly: FUZZTIME=20000x executions (a count: a duration races go1.26's fuzz coordinator, golang/go#75804)
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1000x ./workflows
	$(GO) test -run '^$$' -fuzz '^FuzzNormalizeGitHub$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1000x ./providers/github
	$(GO) test -run '^$$' -fuzz '^FuzzNormalizeGitLab$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1000x ./providers/gitlab
	$(GO) test -run '^$$' -fuzz '^FuzzGitHubProjection$$' -fuzztime $(FUZZTIME) -fuzzminimizetime 1000x ./providers/github

.PHONY: bench
bench: build ## measure ingest, dispatch, engine overhead and memory against their floors (under 3 min; docs/performance.md)
	./$(BIN) bench

# bench-peer's adnanh/webhook: WEBHOOK, a binary, or WEBHOOK_SRC, a checkout of
# github.com/adnanh/webhook that the target builds (the Go module proxy refuses
# the module; docs/performance.md says how to get a checkout).
WEBHOOK     ?=
WEBHOOK_SRC ?=

.PHONY: bench-peer
bench-peer: bench-peer-webhook build ## hookrun serve vs adnanh/webhook, alternating (WEBHOOK_SRC=checkout or WEBHOOK=binary; a few minutes; docs/performance.md)
	@if [ -n "$(WEBHOOK)" ]; then wh="$(WEBHOOK)"; else \
		mod=; if [ -d "$(WEBHOOK_SRC)/vendor" ]; then mod=-mod=vendor; fi; \
		echo "building adnanh/webhook from $(WEBHOOK_SRC) into bin/webhook"; \
		(cd "$(WEBHOOK_SRC)" && CGO_ENABLED=0 GOFLAGS=$$mod $(GO) build -trimpath -o "$(CURDIR)/bin/webhook" .); \
		wh=bin/webhook; fi; \
	./$(BIN) bench peer --webhook "$$wh"

# bench-peer-webhook says loudly what is missing before anything is built.
.PHONY: bench-peer-webhook
bench-peer-webhook:
	@if [ -z "$(WEBHOOK)" ] && [ -z "$(WEBHOOK_SRC)" ]; then \
		echo "!!! bench-peer needs adnanh/webhook and neither WEBHOOK nor WEBHOOK_SRC is set !!!" >&2; \
		echo "!!!   make bench-peer WEBHOOK_SRC=<checkout of github.com/adnanh/webhook>  (built here)" >&2; \
		echo "!!!   make bench-peer WEBHOOK=<webhook binary>" >&2; \
		echo "!!! the Go module proxy refuses the module: docs/performance.md says how to get a checkout" >&2; \
		exit 2; fi
	@if [ -z "$(WEBHOOK)" ] && ! grep -qs '^module github.com/adnanh/webhook' "$(WEBHOOK_SRC)/go.mod"; then \
		echo "!!! WEBHOOK_SRC=$(WEBHOOK_SRC) is not a checkout of github.com/adnanh/webhook (no go.mod naming it) !!!" >&2; exit 2; fi
	@if [ -n "$(WEBHOOK)" ] && [ ! -x "$(WEBHOOK)" ]; then echo "!!! WEBHOOK=$(WEBHOOK) is not an executable !!!" >&2; exit 2; fi

.PHONY: bench-records
bench-records: ## 1,000,000 run records and deliveries: API process RSS < 150 MiB, list p99 < 50 ms, ready < 2 s after a restart (several minutes; docs/performance.md)
	$(GO) test ./stores -run '^$$' -bench '^BenchmarkRecords1M$$' -benchtime 1x -timeout 60m

.PHONY: validate
validate: build ## validate the example workflows
	./$(BIN) validate examples/

.PHONY: clean
clean: ## remove build outputs and the dev data dir
	rm -rf bin .hookrun
