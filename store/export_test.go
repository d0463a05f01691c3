package store

// EncodeEvents is the Go encoder of stored events, for tests that compare
// the SQL side of the codec with it.
var EncodeEvents = encodeEvents
