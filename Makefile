# The README's two commands: `go run ./cmd/throttled demo` and `make test`.
GO ?= go

.PHONY: test deps vet bench fuzz
test: deps vet
	$(GO) test -race -count=1 -timeout 20m ./...

deps:
	./scripts/deps.sh

vet:
	$(GO) vet ./...

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...
