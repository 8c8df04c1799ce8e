// Package coord coordinates throttled's instances through Redis: the
// controller's multipliers published to a hash and a channel and read by
// every enforcer (Publisher, Subscriber), the leader lease of the
// controller replicas (Lease), the heartbeats that count live
// instances for the fallback's local share (Heartbeat), and the tally of
// every instance's counters that the leader's in-process signals read
// (Tally). Each instance's traffic for them is flat in the fleet's size.
package coord

import "errors"

// Sentinel errors.
var (
	// ErrInvalid reports invalid settings or data to publish.
	ErrInvalid = errors.New("coord: invalid input")
	// ErrBadReply reports Redis data or a reply of an unexpected shape.
	ErrBadReply = errors.New("coord: unexpected reply from redis")
)
