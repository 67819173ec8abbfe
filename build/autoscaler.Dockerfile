# Image of the autoscaler (kubectl apply -k deploy/ runs it as `autoscaler run --platform=kubernetes`).
#   docker build -f build/autoscaler.Dockerfile -t ghcr.io/ebb/autoscaler:latest .
# Static binary (no cgo) on distroless: no shell, no package manager,
# runs as the non-root user 65532.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/autoscaler ./cmd/autoscaler

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/autoscaler /autoscaler
USER 65532:65532
ENTRYPOINT ["/autoscaler"]
