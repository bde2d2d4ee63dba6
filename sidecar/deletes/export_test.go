package deletes

// RewriteFile exposes the sweeper's one-file rewrite to the external tests.
var RewriteFile = (*Sweeper).rewrite
