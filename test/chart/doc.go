// Package chart holds the tests of the Helm chart in charts/siglake-compactor and of the image
// build: helm lint and template over the ci/ values files, strict decoding of every rendered
// object into the Kubernetes API types, the rendered environment run through the binary's own
// option parser, the chart README against values.yaml, and `make build` producing the static
// binary the Dockerfile ships. It is a separate package so the binary never links the
// Kubernetes API modules; it has no non-test code.
package chart
