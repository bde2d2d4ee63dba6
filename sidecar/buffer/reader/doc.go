// Package reader is the reader's side of the WAL buffer: the query and its wire form (parameters,
// marks, answer metadata, error bodies, credentials), Client and Buffers that read answers,
// ReadConsistent that reads the lake and the buffers as one exactly-once view (promise 12), and
// `siglake tail`. The server (sidecar/buffer) speaks the same wire form.
package reader
