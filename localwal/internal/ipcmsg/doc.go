// Package ipcmsg reads the Arrow IPC messages of a WAL segment from bytes that may be corrupt:
// it checks each message's flatbuffer metadata before Arrow decodes it, hands the messages to
// Arrow straight out of the segment's bytes, caps what decoding may allocate, and estimates that
// allocation from the metadata alone. A damaged segment then costs an error, never the process.
// It knows nothing of segment headers or reject reasons: localwal's reader types its errors.
package ipcmsg
