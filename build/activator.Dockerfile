# Image of the activator (ACTIVATOR_PLATFORM=kubernetes in deploy/kubernetes/activator.yaml).
#   docker build -f build/activator.Dockerfile -t ghcr.io/ebb/activator:latest .
# Static binary (no cgo) on distroless: no shell, no package manager,
# runs as the non-root user 65532.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/activator ./cmd/activator

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/activator /activator
USER 65532:65532
ENTRYPOINT ["/activator"]
