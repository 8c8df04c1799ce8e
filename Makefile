# The README's two commands: `go run ./cmd/throttled demo` and `make test`.
GO ?= go
# The approved Go toolchain: the go command fetches it from the Go module
# proxy on first use (go.mod still says go 1.26.8, the least version the
# code needs; a machine starts on its own Go and ignores a toolchain line).
# It fixes the standard library's vulnerabilities of go1.26.8 that
# govulncheck reports. `make GOTOOLCHAIN=local test` uses the machine's Go.
export GOTOOLCHAIN := go1.27.3
# go install puts staticcheck and govulncheck here.
export PATH := $(PATH):$(shell $(GO) env GOPATH)/bin

.PHONY: test deps vet lint bench fuzz reliability soak flood
test: deps vet lint
	$(GO) test -race -count=1 -timeout 20m ./...
	# Alone and without the race detector (stall_test.go is built without
	# it): callers' deadlines of 10, 20 and 50 ms on every front with Redis
	# stopped, which the detector's slowdown would measure instead.
	$(GO) test -count=1 -run 'TestStalledRedisEveryFront' .

deps:
	./scripts/deps.sh

vet:
	$(GO) vet ./...

# staticcheck, and govulncheck against the Go vulnerability database built
# from the golang.org/x/vulndb module (scripts/vulndb.sh); reached
# vulnerabilities fail unless listed, with a reason, in .govulncheck-allow.
lint: deps
	staticcheck ./...
	./scripts/govulncheck.sh

bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...

# The long versions of the reliability tests: a 60 s Redis outage.
reliability: deps
	THROTTLED_TEST_OUTAGE=60s $(GO) test -race -count=1 -v -run 'TestRecoveryAfterRedisOutage' .

# The soak at full length (30 s in `make test`).
soak: deps
	THROTTLED_SOAK=5m $(GO) test -race -count=1 -v -timeout 15m -run 'TestSoak' ./cmd/throttled

# The key flood at full size: 1,000,000 random keys (20,000 in `make test`).
flood: deps
	THROTTLED_FLOOD_KEYS=1000000 $(GO) test -count=1 -v -timeout 15m -run 'TestKeyFlood' ./limiter/redisstore
