# ktune — see README.md. Everything builds with CGO_ENABLED=0: the CUDA
# driver and NVRTC are loaded at run time (purego), so one binary runs on
# machines with and without a GPU.
GO      ?= go
BIN     ?= bin/ktune
SPEC    ?= experiments/slice.yaml
OUT     ?= out/$(notdir $(basename $(SPEC)))
RESULTS ?= $(wildcard experiments/results/h200/*.jsonl)
export CGO_ENABLED = 0

.PHONY: build test sweep report docs-img dispatch clean slurm-test kube-check

# The go command records the git revision itself (-buildvcs=auto) only in
# a plain checkout: not in a git worktree (.git is a file there), nor under
# GOFLAGS=-buildvcs=false. The linker flags carry it in every case, so that
# records and `ktune version` name the commit (internal/buildinfo).
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
MODIFIED := $(shell if [ -n "$$(git status --porcelain 2>/dev/null)" ]; then echo true; else echo false; fi)
LDFLAGS  := -X github.com/ktune/ktune/internal/buildinfo.revision=$(REVISION) -X github.com/ktune/ktune/internal/buildinfo.modified=$(MODIFIED)

build:
	$(GO) build -trimpath -buildvcs=auto -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/ktune

## test: every test that runs without a GPU (GPU tests skip, and the
## summary at the end lists each with its reason), after the checks that
## keep the module honest: go.mod tidy, and no function that nothing (not
## even a test) reaches. deadcode is go.mod's tool (`go tool deadcode`):
## with the module cache filled once (go mod download), nothing here needs
## the network. Each step says when it starts and how long it took.
test:
	@tools/make-test.sh "$(GO)"

## sweep: the main job on a GPU machine: doctor, then sweep SPEC into OUT.
## A GPU machine without Go can run a bin/ktune built elsewhere (make build).
sweep:
	@if command -v $(GO) >/dev/null 2>&1; then $(MAKE) --no-print-directory build; \
	 elif [ -x $(BIN) ]; then echo "no Go toolchain here: using the prebuilt $(BIN)"; \
	 else echo "no Go toolchain and no $(BIN): run 'make build' on a machine with Go 1.26 and copy $(BIN) here"; exit 1; fi
	./$(BIN) doctor
	./$(BIN) sweep $(SPEC) -o $(OUT)

## report: render the committed H200 results (no GPU needed).
report: build
	./$(BIN) report $(RESULTS) -o out/report

## docs-img: redraw README.md's images (docs/img) from the committed H200
## results, as make report draws them; a test of report fails while they
## are stale (report/readme_images_test.go maps each to its plot).
docs-img:
	$(GO) test ./report -run '^TestReadmeImages$$' -count=1 -update

## dispatch: regenerate the committed H200 dispatch table from its results.
dispatch: build
	./$(BIN) tune --from experiments/results/h200/h200-frontier2.jsonl -o experiments/results/h200/dispatch
	./$(BIN) tune --from experiments/results/h200/frontier3/paged/h200-frontier3-paged.jsonl -o experiments/results/h200/frontier3/paged/dispatch

## slurm-test: experiments/slurm/sweep.sbatch as a job array under a real
## single-node Slurm started on this machine, on the replay backend (no
## GPU). Installs slurm-wlm and munge when missing: needs root or sudo and
## Debian or Ubuntu. Exit status 77 means skipped, with the reason.
slurm-test:
	experiments/slurm/test.sh

## kube-check: decode the Kubernetes Jobs of experiments/slurm strictly
## into the API's Go types (a module of its own, fetched from the Go
## module proxy: ktune itself does not depend on the Kubernetes API).
kube-check:
	cd experiments/slurm/kubecheck && $(GO) test -count=1 ./...

clean:
	rm -rf bin out
