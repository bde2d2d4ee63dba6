# syntax=docker/dockerfile:1
# siglake image: a static binary (CGO_ENABLED=0, built by `make build`, the same target the tests
# check) on distroless static, running as the nonroot user 65532.
#
#   docker build --build-arg VERSION=$(git describe --always --dirty) --build-arg REVISION=$(git rev-parse HEAD) -t siglake .
#   docker run --rm siglake version

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG VERSION=dev
# The commit (siglake_build_info, `siglake version -v`); the context has no .git to read it from.
ARG REVISION
ARG TARGETOS
ARG TARGETARCH
# make build: CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=$VERSION -X main.revision=$REVISION".
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    GOOS=$TARGETOS GOARCH=$TARGETARCH make build VERSION="$VERSION" REVISION="$REVISION" \
    && mkdir -p out/var/lib/siglake \
    && cp bin/siglake out/siglake

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG REVISION
LABEL org.opencontainers.image.title="siglake" \
      org.opencontainers.image.description="Compactor sidecar for a log/event lake on Apache Iceberg" \
      org.opencontainers.image.source="https://github.com/siglake/siglake" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.revision="$REVISION"
COPY --from=build /src/out/siglake /siglake
# The default WAL, catalog and warehouse live here; owned by the runtime user so `docker run`
# works without a volume. On Kubernetes the chart mounts volumes over it.
# (Copying the parent makes siglake/ a new directory, which --chown applies to.)
COPY --from=build --chown=65532:65532 /src/out/var/lib/ /var/lib/
USER 65532:65532
EXPOSE 9464/tcp 7946/tcp 7946/udp
ENTRYPOINT ["/siglake"]
CMD ["compactor"]
