// Package chart holds the tests of the Helm chart in charts/siglake-compactor: helm lint and
// template over the ci/ values files, strict decoding of every rendered object into the
// Kubernetes API types, the rendered environment run through the binary's own option parser,
// and the chart README against values.yaml. It is a separate package so the binary never links
// the Kubernetes API modules; it has no non-test code. The Dockerfile's tests are in test/image.
package chart
