package throttled

import "github.com/throttledhq/throttled/limiter/coord"

// With controller.scope: instance (a sidecar per pod, each with its own
// backend) the leader reads each instance's saturation from the tally,
// where it publishes under its id, and publishes the instance's own
// factors under the same id ("<tier>@<id>" in the multipliers hash), which
// the instance's subscriber applies in place of the fleet's. One id serves
// both: instanceID.

// instanceID is this instance's id among the fleet on its Redis, made on
// first use (the build runs on one goroutine).
func (s *Instance) instanceID() string {
	if s.fleetID == "" {
		s.fleetID = coord.NewInstanceID()
	}
	return s.fleetID
}
