package delverpc

// Requests is how many requests t sent to the server so far.
func Requests(t *Target) uint64 { return t.requests() }
