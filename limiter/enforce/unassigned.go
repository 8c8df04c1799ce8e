package enforce

import "github.com/throttledhq/throttled/internal/enum"

// UnassignedKeys says what an API key without a tier assignment is.
type UnassignedKeys uint8

// What unassigned keys are.
const (
	// UnassignedAnonymous (the default): a key that has no assignment and
	// that no identity.KeyVerifier accepted is not believed. The request is
	// anonymous: its client is its IP (grouped as identity groups IPs), of
	// the anonymous tier, and api_key rules do not apply to it. So random
	// keys are not a way out of per-client limits.
	UnassignedAnonymous UnassignedKeys = iota
	// UnassignedDefaultTier believes every key as presented: a key without
	// an assignment is a client of its own in the default tier. Only for
	// deployments that verify keys before throttled sees them.
	UnassignedDefaultTier
)

var unassignedNames = enum.New[UnassignedKeys]("enforce", "unassigned keys", "anonymous", "default_tier")

func (u UnassignedKeys) String() string { return unassignedNames.String(u) }

// ParseUnassignedKeys reads a name as printed by String; "" means
// UnassignedAnonymous.
func ParseUnassignedKeys(s string) (UnassignedKeys, error) {
	if s == "" {
		return UnassignedAnonymous, nil
	}
	return unassignedNames.Parse(s)
}
