# syntax=docker/dockerfile:1
# throttled: a static binary on distroless. docker-compose.yml builds it.
#   docker build -t throttled --build-arg VERSION=$(git describe --always) .

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" \
	-o /out/throttled ./cmd/throttled

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/throttled /usr/local/bin/throttled
USER nonroot:nonroot
# 8080: the proxy listener; 9090: the admin API, /metrics, /healthz, /readyz
EXPOSE 8080 9090
ENTRYPOINT ["/usr/local/bin/throttled"]
CMD ["serve", "--config", "/etc/throttled/config.yaml"]
