// Package image tests the Dockerfile without a Docker daemon: BuildKit's own parser and linter
// read it, its final stage must match the chart (user, ports, default command), and its build
// stage runs as written on a .dockerignore-filtered context to produce the static binary the
// final stage ships.
//
// It is a module of its own so BuildKit's dependency graph (which would raise grpc and genproto
// in the main module) never reaches the siglake binary. `make test` runs it.
package image
