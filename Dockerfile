# syntax=docker/dockerfile:1
# throttled: a static binary on distroless. docker-compose.yml builds it.
#   docker build -t throttled --build-arg VERSION=$(git describe --always --dirty) .
#
# Base images are pinned by digest (the tag is for people; the digest is what
# is pulled). The digests are the published ones for these tags; to move to a
# newer image, resolve its digest and replace both:
#   docker buildx imagetools inspect golang:1.26.8   (or: crane digest golang:1.26.8)
# go.mod's go line (1.26.8) is the least Go the build image may have: the
# official image sets GOTOOLCHAIN=local.

FROM golang:1.26.8@sha256:0f063af2d465d8dcae54cce04278ada488b96f77b42449c8d071e47d016cc65a AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# The version `throttled version` and the logs report (main.version). The
# source has no .git here (.dockerignore): pass it, as docker-compose.yml does.
ARG VERSION=unknown
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
	-o /out/throttled ./cmd/throttled

FROM gcr.io/distroless/static-debian12:nonroot@sha256:afa5c872c891853ca7fcf1f12c3edb23f7eeef36189728842dd51042ff57f7ab
COPY --from=build /out/throttled /usr/local/bin/throttled
USER nonroot:nonroot
# 8080: the proxy listener; 9090: the admin API, /metrics, /healthz, /readyz
EXPOSE 8080 9090
# No shell or curl in distroless: the binary probes itself. /readyz stays 200
# while Redis is down (the fallback decides); it fails only when the instance
# cannot decide. Another admin.listen port: override with --url.
HEALTHCHECK --interval=10s --timeout=4s --start-period=10s --retries=3 \
	CMD ["/usr/local/bin/throttled", "healthcheck", "--quiet", "--url", "http://127.0.0.1:9090/readyz"]
ENTRYPOINT ["/usr/local/bin/throttled"]
CMD ["serve", "--config", "/etc/throttled/config.yaml"]
