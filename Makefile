# siglake: build and test. `make test` is the command CI runs (.ci/run); it starts every
# service the tests need (PostgreSQL, versitygw, the DuckDB checker) through scripts/.
GO        ?= go
VERSION   ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# The commit, for siglake_build_info and `siglake version -v` (empty outside a checkout).
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS   := -s -w -X main.version=$(VERSION) -X main.revision=$(REVISION)
FUZZTIME  ?= 10s
# go test's own per-binary limit: a hung test fails with a goroutine dump instead of hanging CI.
TESTFLAGS ?= -timeout 30m

.PHONY: build test race unit binpages image-check fuzz services services-down demo clean

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/siglake ./cmd/siglake

# The packages whose loops run concurrently (drain, maintenance, claims, gossip, HTTP status):
# `make test` runs them under the race detector, where a finding is a bug, never a flake.
RACE_PKGS  := ./sidecar/... ./gossip/... ./localwal/...
OTHER_PKGS  = $(shell $(GO) list ./... | grep -v -E 'siglake/siglake/(sidecar|gossip|localwal)(/|$$)')

# Everything: services up, all packages (unit, integration, e2e with the real binary; the
# concurrent ones under -race), a short fuzz run.
test: services
	$(GO) vet ./...
	$(GO) test -race $(TESTFLAGS) $(RACE_PKGS)
	$(GO) test $(TESTFLAGS) $(OTHER_PKGS)
	$(MAKE) binpages
	$(MAKE) image-check
	$(MAKE) fuzz

# The concurrent packages under the race detector alone.
race:
	$(GO) test -race $(TESTFLAGS) $(RACE_PKGS)

# The Dockerfile, checked without a Docker daemon (test/image is a module of its own).
image-check:
	cd test/image && $(GO) vet ./... && $(GO) test $(TESTFLAGS) ./...

# Unit and embedded-catalog tests only; integration tests skip (outside CI) when services are down.
unit:
	$(GO) test $(TESTFLAGS) ./...
	$(MAKE) binpages

# The release of the binary's start-up pages (sidecar/startpages_linux.go) in the builds that map
# a written GNU_RELRO segment read-only: a PIE, and an externally linked binary where the
# toolchain has a C compiler for it (skipped, with a message, where it has none).
binpages:
	CGO_ENABLED=0 $(GO) test $(TESTFLAGS) -buildmode=pie -run TestReleaseBinaryPages ./sidecar
	@cc="$$($(GO) env CC)"; if command -v "$${cc%% *}" >/dev/null 2>&1; then \
		echo "CGO_ENABLED=1 $(GO) test -ldflags=-linkmode=external -run TestReleaseBinaryPages ./sidecar"; \
		CGO_ENABLED=1 $(GO) test $(TESTFLAGS) -ldflags=-linkmode=external -run TestReleaseBinaryPages ./sidecar; \
	else echo "binpages: no C compiler ($$cc): externally linked build skipped"; fi

fuzz:
	$(GO) test ./localwal -run='^$$' -fuzz=FuzzReadSegment -fuzztime=$(FUZZTIME) -fuzzminimizetime=200x

# The test servers, plus helm and promtool for the chart tests: built before `go test` so their
# first (slow) build never counts against a test binary's timeout.
services:
	scripts/test-services.sh up >/dev/null
	scripts/helm.sh install >/dev/null
	scripts/promtool.sh install >/dev/null

services-down:
	scripts/test-services.sh down

demo:
	$(GO) run -ldflags '-X main.version=$(VERSION) -X main.revision=$(REVISION)' ./cmd/siglake demo

clean:
	rm -rf bin siglake-demo
