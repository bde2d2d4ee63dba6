package reader

// The wire form of an answer, which the server writes and Client reads.

// ContentType is the media type of an answer: an Arrow IPC stream.
const ContentType = "application/vnd.apache.arrow.stream"

// Schema-level metadata keys of an answer (also sent as Siglake-Buffer-* response headers).
const (
	MetaTable    = "siglake.buffer.table"
	MetaAfter    = "siglake.buffer.after"    // the marks the rows are above
	MetaMarks    = "siglake.buffer.marks"    // the table's marks the buffer read (empty: unverified)
	MetaThrough  = "siglake.buffer.through"  // after= of the next request: past every served segment
	MetaComplete = "siglake.buffer.complete" // "false": the limits cut the answer; continue from through
	MetaSegments = "siglake.buffer.segments" // the segments served, comma-separated file names
	MetaVerified = "siglake.buffer.verified" // "false" for unverified=true answers
)

// ErrorBody is the JSON body of an error status.
type ErrorBody struct {
	Error string `json:"error"`
	// Parameter names the malformed parameter (400).
	Parameter string `json:"parameter,omitempty"`
	// Reason, Stream and Marks explain a refusal (409): Marks are the table's marks now, in the
	// after= form; reload the table (its marks are these or newer) and ask again. A 401 has the
	// Reason alone (siglake_buffer_unauthorized_total's).
	Reason string `json:"reason,omitempty"`
	Stream string `json:"stream,omitempty"`
	Marks  string `json:"marks,omitempty"`
}

// Reasons a request is refused with 401 (siglake_buffer_unauthorized_total{reason}).
const (
	UnauthorizedMissing      = "missing"        // no Authorization header
	UnauthorizedMalformed    = "malformed"      // an Authorization header that is not "Bearer <token>"
	UnauthorizedInvalid      = "invalid"        // a bearer token that is not in the token file
	UnauthorizedNoClientCert = "no_client_cert" // mutual TLS on, and no verified client certificate
)
