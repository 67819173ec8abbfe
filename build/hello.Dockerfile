# Image of the example app of deploy/kubernetes/example-app.yaml (deploy/local/hello).
#   docker build -f build/hello.Dockerfile -t ghcr.io/ebb/hello:latest .
# Static binary (no cgo) on distroless: no shell, no package manager,
# runs as the non-root user 65532.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/hello ./deploy/local/hello

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/hello /hello
USER 65532:65532
ENTRYPOINT ["/hello"]
