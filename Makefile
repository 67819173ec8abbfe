# Ebb: request-driven autoscaling, down to zero and back.
# `make` (or `make help`) lists the targets.

GO        ?= go
BIN       ?= bin
FUZZ_TIME ?= 10s
SCENARIO  ?= deploy/examples/burst.json
MAX_LINE  ?= 160
# The fleet model's random fault schedules in every make test (race off:
# the model is one goroutine; the race run above does a few).
FLEET_SEEDS ?= 2000
FLEET_SEEDS_MANY ?= 3000
# The race detector needs cgo (a C compiler); without one, make test runs
# without it and says so. -timeout 20m: the end-to-end tests build the
# binaries inside the test, which on a fresh 2-core machine (empty build
# cache, every package compiling at once) takes minutes on its own.
RACE      ?= $(if $(filter 1,$(shell $(GO) env CGO_ENABLED)),-race)


.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build the three binaries and the sample apps (hello, grpchello, cpuwork) into ./bin.
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./cmd/... ./deploy/local/hello ./deploy/local/grpchello ./deploy/local/cpuwork

# make images: where the archives go, the registry path the images are
# named under, and their tag (default: the file VERSION, else git describe
# --always --dirty).
IMAGES   ?= $(BIN)/images
REGISTRY ?= ebb.dev
VERSION  ?=

.PHONY: images
images: ## Build every image (autoscaler, activator, queueproxy, hello, grpchello, cpuwork, pause) into IMAGES as OCI archives: static Go, no base image, no Docker; REGISTRY, VERSION.
	$(GO) run ./hack/images -out $(IMAGES) -repo $(REGISTRY) $(if $(VERSION),-version $(VERSION))

.PHONY: push
push: ## Build every image as make images does and push each to REGISTRY/NAME:VERSION (docker config credentials; INSECURE=1: plain HTTP).
	$(GO) run ./hack/images -out $(IMAGES) -repo $(REGISTRY) $(if $(VERSION),-version $(VERSION)) -push $(if $(filter 1,$(INSECURE)),-insecure)

# make deploy: the kubectl of the cluster to install on (its current
# context), and whether the example app hello is installed too.
KUBECTL ?= kubectl
EXAMPLE ?= 1

.PHONY: deploy
deploy: ## Install Ebb with the images of `make images` (kubectl apply -k IMAGES), wait for it, and the example app hello (EXAMPLE=0: not); KUBECTL.
	@test -f $(IMAGES)/kustomization.yaml || { echo "make deploy: no $(IMAGES)/kustomization.yaml: run make images first (same IMAGES)"; exit 1; }
	$(KUBECTL) apply -k $(IMAGES)
	$(KUBECTL) -n ebb-system rollout status deployment/ebb-autoscaler --timeout=5m
	$(KUBECTL) -n ebb-system rollout status deployment/ebb-activator --timeout=5m
	@# The example app is created at zero; applied again (an upgrade), it keeps the replicas the autoscaler set.
	$(if $(filter 1,$(EXAMPLE)),n=$$($(KUBECTL) -n default get deployment hello -o jsonpath='{.spec.replicas}' 2>/dev/null); \
	  if [ -n "$$n" ]; then $(KUBECTL) kustomize $(IMAGES)/example | sed "s/^  replicas: 0$$/  replicas: $$n/" | $(KUBECTL) apply -f -; \
	  else $(KUBECTL) apply -k $(IMAGES)/example; fi)

.PHONY: test
test: ## Run every test with the race detector (a test skipped for want of an OS package says so), then FLEET_SEEDS (2000) fleet model schedules (the real-code fault harness runs two schedules in the race pass; make test-fleet runs thousands).
	@[ -n "$(RACE)" ] || echo "make test: no race detector: it needs cgo and a C compiler (apt-get install gcc)"
	$(GO) test $(RACE) -count=1 -timeout 20m -json ./... | $(GO) run ./hack/testreport
	$(GO) test -count=1 -timeout 10m ./internal/fleetsim -run '^TestRandomSchedules$$' -args -seeds=$(FLEET_SEEDS)

.PHONY: test-fleet
test-fleet: ## The fleet: FAULT_SCHEDULES (2000) schedules of the real leader and write path (faultfleet, 32 at once, ~5 min idle), the model (internal/fleetsim): FLEET_SEEDS_MANY (3000) schedules, FUZZTIME (2m) of FuzzFleet.
	$(GO) test -count=1 -timeout 60m -parallel 32 ./internal/faultfleet -args -schedules=$(or $(FAULT_SCHEDULES),2000) -schedule-time=2s -seed=1000
	$(GO) test -count=1 -timeout 60m -v ./internal/fleetsim -run 'TestRandomSchedules|TestRegressionSchedules' -args -seeds=$(FLEET_SEEDS_MANY) | grep -v '^=== '
	$(GO) test -count=1 -run XXX -fuzz FuzzFleet -fuzztime $(or $(FUZZTIME),2m) ./internal/fleetsim

.PHONY: lint
lint: check-imports ## gofmt, go vet (the k8s and node tests too), go.mod tidy, goroutine t.Fatal/t.Skip, line length, no //nolint, no path outside the repo in comments or docs, the import rules, the exported surface (hack/checksurface: at most 5% of what pkg/ exports unused by other packages).
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags k8s ./test/k8s/
	$(GO) vet -tags node ./test/node/
	$(GO) mod tidy -diff
	$(GO) run ./hack/testgoroutines ./...
	@out=$$(awk 'length($$0) > $(MAX_LINE) {print FILENAME ":" FNR ": " length($$0) " characters"}' $$(git ls-files 'pkg/*.go' 'cmd/*.go')); \
	  if [ -n "$$out" ]; then echo "lines over $(MAX_LINE) characters (wrap them):"; echo "$$out"; exit 1; fi
	@out=$$(git grep -n '//nolint' -- '*.go'); if [ -n "$$out" ]; then echo "//nolint comments, read by no linter here (remove them):"; echo "$$out"; exit 1; fi
	$(GO) run ./hack/checkcitations
	$(GO) run ./hack/checksurface

.PHONY: check-imports
check-imports: ## Enforce the import rules the folders give (layers.go: foundations, core, libraries, components; no k8s in the queue-proxy).
	$(GO) run ./hack/checkimports

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZ_TIME each (an input that finds new coverage is minimized for at most FUZZ_MINIMIZE, 10x: 10 runs).
	@set -e; for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZ_TIME) -fuzzminimizetime $(or $(FUZZ_MINIMIZE),10x) $$pkg; \
	  done; \
	done

.PHONY: bench
bench: ## Run the Go benchmarks (decider tick, replay, hot paths).
	$(GO) test -run '^$$' -bench . -benchmem ./...

.PHONY: run
run: build ## Run Ebb locally on deploy/local: front door http://127.0.0.1:8080, API :9091.
	$(BIN)/autoscaler run --manifests deploy/local --queue-proxy $(BIN)/queueproxy

.PHONY: simulate
simulate: ## Replay SCENARIO (default deploy/examples/burst.json) through the decider, with reasons.
	$(GO) run ./cmd/autoscaler simulate --explain $(SCENARIO)

.PHONY: bench-queueproxy-light
bench-queueproxy-light: ## The queue-proxy's CPU per request at 20 req/s (one keep-alive client) and at idle, beside the bare proxy, busy polling off/on (hey; ~2 min).
	bash bench/queueproxy/light.sh

.PHONY: bench-queueproxy
bench-queueproxy: ## Load-test the queue-proxy against a minimal fasthttp proxy (wrk, hey; ROUNDS, DURATION, BASELINE_REF).
	bash bench/queueproxy/run.sh

.PHONY: bench-count
bench-count: ## Instructions (callgrind), system calls and context switches per request of each hop against the bare proxy (REQUESTS, CONNS, BASELINE_REF, CALLGRIND_KEEP).
	bash bench/queueproxy/count.sh

.PHONY: bench-grpc
bench-grpc: ## Load-test unary gRPC through the queue-proxy vs a bare h2c reverse proxy (ROUNDS, DURATION, CONNS).
	$(GO) run ./bench/grpc

.PHONY: bench-activator
bench-activator: ## Load-test the activator: warm path vs a bare fasthttp proxy, cold starts (wrk, hey; ROUNDS, DURATION, COLD_RUNS, BASELINE_REF).
	$(GO) run ./bench/activator/bench warm coldstart

.PHONY: soak-activator
soak-activator: ## Overload soak of the activator: hey -c 200 for SOAK_DURATION (5m), RSS under RSS_CEILING_MIB (100).
	$(GO) run ./bench/activator/bench soak

# bench-shard's revisions: 300,000, decided twice at once (one replica, and
# the fleet), about 0.9 core in all on a 2-core machine.
REVISIONS ?= 300000

.PHONY: bench-autoscaler
bench-autoscaler: ## One autoscaler: 10,000 and 100,000 revisions with traffic (a quarter HPA on cpu), 1,000,000 at zero, 3,000 pods over HTTP, with the RevisionAutoscaler writer at 20 writes/s (~5 min).
	$(GO) run ./bench/autoscaler -revisions 10000,100000 -zero 1000000 -http-pods 3000 -duration 20s -hpa-share 0.25 -status-writes 20

.PHONY: bench-autoscaler-count
bench-autoscaler-count: ## Instructions (callgrind) per revision-second of the autoscaler's steady state (BenchmarkSecondsAtScale; SCALE_REVISIONS, SECONDS_MEASURED, BASELINE_REF).
	bash bench/autoscaler/count.sh

.PHONY: bench-shard
bench-shard: ## The same revisions (REVISIONS, 300000) decided by one autoscaler and by 3 sharing them through bucket Leases, at once: each one's share, CPU ratio (~6 min).
	$(GO) run ./bench/shard -revisions $(REVISIONS) -replicas 3 -warmup 60s

# The development trace of `make bench-whatif` (Azure Functions 2019 format).
TRACE ?= ../shared/traces/azure2019

# PREDICTORS=all (or a comma-separated list) also compares the learned
# policy's predictor with the others (docs/whatif.md).
PREDICTORS ?=

# ARRIVALS: where in its minute each invocation arrives: random (the
# default: a random second, for each of SEEDS seeds, the spread over them
# printed) or even (the contract's spread, which puts a minute's lone
# request at second 30: docs/whatif.md says what that is worth).
ARRIVALS ?= random
SEEDS ?= 3

# PAIRS: the fixed pairs (awake after the last request x parked before
# zero) the learned policy with parking is compared with, on every
# seed; PAIRS= runs none (docs/whatif.md, The parked tier).
PAIRS ?= 2s,6s,60s x 10m,30m,1h,2h,4h

.PHONY: bench-whatif
bench-whatif: ## Learned vs Knative scale to zero on TRACE (whatif, --cold-start 1s, random arrivals, SEEDS=3 seeds): both targets (cold starts, cost = idle + starts) on all and each owner half, spread over seeds and owners, time; with and without parking (parked-cost 0.05, 0.1, 0.2) against the fixed pairs of PAIRS; PREDICTORS=all compares predictors; ARRIVALS=even uses the contract's even spread.
	$(GO) run ./bench/whatif -trace $(TRACE) -cold-start 1s -predictors "$(PREDICTORS)" -arrivals $(ARRIVALS) -seeds $(SEEDS) -pairs "$(PAIRS)"

.PHONY: testbed-build
testbed-build: ## Build the testbed's control-plane binaries into the cache (cold 8-15 min, then seconds).
	bash hack/testbed.sh build

.PHONY: testbed-up
testbed-up: ## Start the testbed: etcd, kube-apiserver, controllers, kwok in a network namespace (root).
	bash hack/testbed.sh up

.PHONY: testbed-down
testbed-down: ## Stop the testbed; delete its network namespace and run dir.
	bash hack/testbed.sh down

.PHONY: demo-plot
demo-plot: ## Draw each scenario of deploy/examples as docs/images/<name>.svg (the chart of simulate --plot).
	$(GO) run ./hack/demoplot -in deploy/examples -out docs/images

# The integration tests get a testbed of their own (namespace and run dir),
# so they never disturb one a developer has up; pods end gracefully there
# (EBB_TESTBED_GRACEFUL_DELETE), as on a cluster.
K8S_TESTBED_NETNS   ?= ebb-test-k8s
K8S_TESTBED_RUN_DIR ?= $(or $(TMPDIR),/tmp)/ebb-test-k8s
# K8S_RUN narrows the run to the tests it matches (go test -run).
K8S_RUN             ?=

.PHONY: test-k8s
test-k8s: build ## Integration tests on the testbed (root): opt-in, ConfigMap, scale from/to zero, load, failover, a wave of 500 wakes (EBB_WAVE=N), RBAC, HPA on cpu/memory.
	EBB_TESTBED_NETNS=$(K8S_TESTBED_NETNS) EBB_TESTBED_RUN_DIR=$(K8S_TESTBED_RUN_DIR) EBB_TESTBED_GRACEFUL_DELETE=1 \
	  EBB_BIN=$(CURDIR)/$(BIN) GO=$(GO) K8S_RUN='$(K8S_RUN)' bash hack/test-k8s.sh

# make test-node: Ebb end to end on the testbed's real node (containerd,
# runc, CNI, kubelet, kube-proxy; root): make images, make deploy, then the
# Go tests of test/node (build tag node) inside the testbed
# (hack/test-node.sh; NODE_RUN: a -run pattern, NODE_WAKES: cold starts).
NODE_TESTBED_NETNS   ?= ebb-test-node
NODE_TESTBED_RUN_DIR ?= $(or $(TMPDIR),/tmp)/ebb-test-node

.PHONY: test-node
test-node: images ## End to end on a real node (root; containerd, runc, CNI plugins): install, test/node (cold start p50/p95 and split, hey, scale-down, fleet, Knative, upgrade, failing apps: crash, OOM, kubelet stopped; the docs' install commands).
	EBB_TESTBED_NETNS=$(NODE_TESTBED_NETNS) EBB_TESTBED_RUN_DIR=$(NODE_TESTBED_RUN_DIR) EBB_TESTBED_IMAGES=$(CURDIR)/$(IMAGES) \
	  bash hack/test-node.sh
