# Image of the queue-proxy sidecar (deploy/kubernetes/example-app.yaml); no k8s.io module in it.
#   docker build -f build/queueproxy.Dockerfile -t ghcr.io/ebb/queueproxy:latest .
# Static binary (no cgo) on distroless: no shell, no package manager,
# runs as the non-root user 65532.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/queueproxy ./cmd/queueproxy

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/queueproxy /queueproxy
USER 65532:65532
ENTRYPOINT ["/queueproxy"]
