# lhcnp — make targets. `make test` runs every test; CI runs it via .ci/run.
GO ?= go
SHELL := /bin/bash
export LHCNP_ORACLES ?= required

.PHONY: all build test deps unit race fuzz-short fuzz bench results tuner-phases tuner-eval generate check-gen yanglint vet fmt-check test-long bench-collector

all: build

# bin/lhcnp (make build, make lab) is built without cgo (nothing in it needs
# it: Go's own DNS resolver and os/user) and without DWARF debug information,
# which the compiler otherwise writes for every package: 13 % of the CPU
# time of a build from empty caches (docs/lab.md, "How fast it comes up").
# Panics, stack dumps and pprof still name functions, files and lines; for a
# debugger: make build BUILD_FLAGS=. Tests build as go test does (-race
# needs cgo), so they do not share these cache entries.
BUILD_ENV ?= CGO_ENABLED=0
BUILD_FLAGS ?= -ldflags=-w -gcflags=all=-dwarf=false

build:
	$(BUILD_ENV) $(GO) build $(BUILD_FLAGS) -o bin/lhcnp ./cmd/lhcnp

# The whole system on this machine, the main job (docs/lab.md): a private
# PostgreSQL in .lhcnp-lab, the lab topology's switches, the collector, the
# tuner and the dashboard on http://127.0.0.1:8080/. Ctrl-C stops it.
# LAB_FLAGS passes flags (lhcnp lab -h), e.g. LAB_FLAGS="--http 127.0.0.1:9000".
# On a fresh machine the installation of PostgreSQL runs beside the build,
# and while the build's modules download (go list -deps fetches exactly
# those), the standard library's bulk compiles: it needs no module and starts
# the build's critical path. scripts/lab-startup-time.sh measures it.
.PHONY: lab
lab:
	./scripts/deps.sh lab & deps=$$!; \
	$(BUILD_ENV) $(GO) build $(BUILD_FLAGS) net/http log/slog encoding/json & std=$$!; \
	$(GO) list -deps ./cmd/lhcnp >/dev/null; wait $$std; \
	$(BUILD_ENV) $(GO) build $(BUILD_FLAGS) -o bin/lhcnp ./cmd/lhcnp; built=$$?; \
	wait $$deps && [ $$built = 0 ]
	./bin/lhcnp lab $(LAB_FLAGS)

# The lab for LAB_SOAK_MINUTES (default 30) on free ports in a temporary state
# directory: disk, memory, CPU and engine-lag every 30 s into lab-soak.tsv
# (scripts/lab-soak.sh, docs/lab.md "Disk"). Not part of make test.
.PHONY: lab-soak
lab-soak: build
	LAB_SOAK_MINUTES=$${LAB_SOAK_MINUTES:-30} ./scripts/lab-soak.sh

# The collector on a Citus coordinator with two workers under two switches
# load for CITUS_SOAK (default 10m): a worker down 30 s (each in turn),
# then the coordinator until the collector spills, again and again; every
# sample and CNP stored once (collector.TestCitusFaults, docs/scaling.md
# Step 3). Not part of make test, which runs one round.
.PHONY: citus-soak
citus-soak:
	set -o pipefail; LHCNP_CITUS_SOAK=$${CITUS_SOAK:-10m} $(GO) test -count=1 -timeout 0 -v -run '^TestCitusFaults$$' ./collector/ 2>&1 | \
		grep --line-buffered -v 'level=' | tee citus-soak.txt

# Everything CI checks, in about twelve minutes on two cores (a clean clone of
# main, quiet machine, 2026-12-06: fuzz-short 2.2, race 3.6, unit 6.1 minutes).
test: deps fmt-check vet check-gen yanglint fuzz-short race unit

# citus: the Citus tests (internal/pgtest.NewCitus) fail rather than skip
# under LHCNP_ORACLES=required, so make test installs it with the other tools.
deps:
	./scripts/deps.sh citus

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# go test -json through scripts/testsum: package lines, failed tests in full,
# and a closing "tests: N passed, N failed, N skipped".
unit:
	set -o pipefail; $(GO) test -count=1 -json ./... | $(GO) run ./scripts/testsum

# The packages that share state across goroutines, under the race detector.
race:
	$(GO) test -count=1 -race -short ./dataplane-sim/engine/... ./gnmi/... ./server/... ./collector/...

# The collector's fault tests at the issue's full length under the race
# detector (make test runs the 30 s PostgreSQL outage in its unit step and a
# 3 s one in its -short race step), five times over.
test-long:
	$(GO) test -count=5 -race -v -run 'TestPostgresOutage|TestLeasesShareTargets|TestKillMidBatch' ./collector/

# The collector's benchmarks (docs/collector.md#benchmarks).
bench-collector:
	$(GO) test -run '^$$' -bench . -benchtime 1x -count 5 ./collector/... | tee bench-collector.txt

fuzz-short:
	FUZZTIME=3s ./scripts/fuzz.sh

fuzz:
	FUZZTIME=$${FUZZTIME:-60s} ./scripts/fuzz.sh

# Benchmarks compared with benchstat (the reference implementations run in the
# same benchmark binaries).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./dataplane-sim/... ./gnmi/... ./server/... | tee bench.txt
	$(GO) tool benchstat bench.txt

# docs/results.md and docs/results/*.png: mechanisms side by side on the
# comparison scenarios (about three minutes on two shared cores: 80 runs plus the DCQCN grid).
results:
	$(GO) run ./cmd/lhcnp sim compare --out out/compare --markdown docs/results.md

# docs/tuner-phases.md: the tuner's step scenarios with their steps shifted by
# 0, 5, ... 45 ms, the tuned run against every static setting at each phase
# (about a minute on two cores: 340 runs, summaries only;
# docs/tuner.md "The step bars at ten phases").
tuner-phases:
	$(GO) run ./cmd/lhcnp sim phases --out out/phases --markdown docs/tuner-phases.md

# docs/tuner.md's train and test tables: every scenario of the tuner's family
# (scenarios/family/tuner.yaml: 48 train and 32 held-out test seeds, runs of
# up to 200 WAN round trips) with the tuner, the static grid and the finer
# grid around its best, each run at three simulation seeds (--sim-seeds 3:
# a setting's J is its mean over them, the best static setting chosen on
# that mean and re-measured once more at a fourth seed; the protocol's
# seventh version, docs/tuner.md "The starting-point guard and the seventh
# protocol"). Its cost is about 3.05 times one seed's: one seed is about 30
# CPU-minutes (15 minutes on two free cores, two to three hours on the
# shared machine at a load of 15), so about 90 CPU-minutes, 45 minutes on
# two free cores; the held-out set alone about 35-40 CPU-minutes
# (docs/tuner.md "Measuring past the noise"). Not part of `make test`.
# It also writes the tables' rows as the development baselines
# (tuner-baselines), so that they follow the tables (a test checks it).
tuner-eval:
	$(GO) run ./cmd/lhcnp sim eval --family scenarios/family/tuner.yaml --set both --sim-seeds 3 --oracle --jobs 2 --out out/tuner-eval --markdown docs/tuner.md
	$(MAKE) tuner-baselines

# scenarios/family/evals/{train,test}.csv: docs/tuner.md's train and test
# tables as CSV (the means as printed; per-seed J empty), the baselines of
# `make tuner-dev` (scenarios/family/evals/README.md).
.PHONY: tuner-baselines
tuner-baselines:
	$(GO) run ./cmd/lhcnp sim eval --csv-from-markdown docs/tuner.md --set both --out scenarios/family/evals

# The policy's development loop (docs/tuner.md "Developing the policy:
# `make tuner-dev`"): the tuned runs alone of the development set (train
# 1-48, the retired held-out set of the baseline test.csv and those kept
# before it, retired-*.csv, each into its own directory; never the fresh
# held-out set) at the baselines' three simulation seeds, against their
# stored static results, and the paired comparison with the baselines'
# tuner J. 432 tuned runs (train, test.csv's set and two retired-*.csv),
# about 5 CPU-minutes (3 minutes of wall time on an idle two-core
# machine); not part of make test.
# TUNER_DEV_OUT names the output directory; TUNER_DEV_REF=DIR compares with
# an earlier run's DIR/{train,test}.csv (two policies, pair by pair)
# instead of the baselines' tuner J. TUNER_DEV_ORACLE=1 also runs each
# seed's oracle floor (sim eval --oracle: the baseline's best static
# setting set at the tuned run's first decision; 240 runs more).
# TUNER_DEV_CONFIG=FILE runs the policy of FILE's policy section (a tuner
# configuration file, examples/tuner.yaml's format) instead of its defaults.
TUNER_DEV_OUT ?= out/tuner-dev
.PHONY: tuner-dev
tuner-dev:
	$(GO) run ./cmd/lhcnp sim eval --tuned-only --baseline scenarios/family/evals/train.csv $(if $(TUNER_DEV_REF),--compare $(TUNER_DEV_REF)/train.csv) $(if $(TUNER_DEV_ORACLE),--oracle) $(if $(TUNER_DEV_CONFIG),--tuner-config $(TUNER_DEV_CONFIG)) --jobs 2 --out $(TUNER_DEV_OUT)
	$(GO) run ./cmd/lhcnp sim eval --tuned-only --baseline scenarios/family/evals/test.csv $(if $(TUNER_DEV_REF),--compare $(TUNER_DEV_REF)/test.csv) $(if $(TUNER_DEV_ORACLE),--oracle) $(if $(TUNER_DEV_CONFIG),--tuner-config $(TUNER_DEV_CONFIG)) --jobs 2 --out $(TUNER_DEV_OUT)
	for f in scenarios/family/evals/retired-*.csv; do n=$$(basename $$f .csv); \
	  $(GO) run ./cmd/lhcnp sim eval --tuned-only --baseline $$f $(if $(TUNER_DEV_REF),--compare $(TUNER_DEV_REF)/$$n/test.csv) $(if $(TUNER_DEV_ORACLE),--oracle) $(if $(TUNER_DEV_CONFIG),--tuner-config $(TUNER_DEV_CONFIG)) --jobs 2 --out $(TUNER_DEV_OUT)/$$n || exit 1; done

# Issue 24's lab bar: a load step in the lab's traffic, counted in tuner
# periods to the first tightening (TestLabLoadStepAnswered, docs/tuner.md
# "In the lab: a load step"); minutes of wall time, not part of make test.
.PHONY: tuner-lab-step
tuner-lab-step:
	LHCNP_MEASURE_LAB_STEP=1 $(GO) test ./cmd/lhcnp -run 'TestLabLoadStepAnswered$$' -count=1 -v -timeout 30m

generate:
	$(GO) generate ./gen/...

check-gen:
	./scripts/check-gen.sh

yanglint:
	./scripts/yanglint.sh
