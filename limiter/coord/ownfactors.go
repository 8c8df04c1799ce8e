package coord

// An instance's own factors (multiplier.Set.Instances, a controller whose
// scope is the instance) travel apart from the fleet's hash and message,
// so that what every instance reads stays the same size however many
// instances have factors of their own: the leader writes each such
// instance a hash of its own, "<hash>@<id>" in the fleet hash's cluster
// slot (fields _at and its tiers, expiring after StaleAfter), and
// publishes it a message of its own on the channel of that name (the
// fleet's message with only its entry), just before the fleet's. The ids
// are listed in the set "<hash>@" for the next leader's Load alone. An
// instance subscribes to the fleet's channel and its own, and polls both
// hashes in one transaction; it applies its own factors of the set it
// holds, and an instance that no longer differs gets the next set
// without them. Every instance thus reads the fleet's fields and its own:
// O(tiers), where one hash of every instance's factors would be
// O(instances × tiers) to each of the instances, every poll.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/throttledhq/throttled/limiter/multiplier"
)

// ownKey is the hash (and channel) of instance id's own factors, beside
// the fleet's hash key; ownIDsKey lists the ids that have one.
func ownKey(key, id string) string { return inSlotOf(key, multiplier.InstanceSep+id) }
func ownIDsKey(key string) string  { return inSlotOf(key, multiplier.InstanceSep) }

// ownArgs are the KEYS (after the fleet hash's and the lease's) and the
// ARGV blocks of m's own factors for multPublishScript: the ids' set
// (always), then per instance (in id order) its hash; per instance the ARGV block id,
// message (m's message with only its entry), n, then n tier/value pairs.
func ownArgs(key string, m multiplier.Set, mm multiplierMessage) (keys []string, args []any, err error) {
	keys = []string{ownIDsKey(key)} // emptied at every publication, none listed when none differs
	for _, id := range slices.Sorted(maps.Keys(m.Instances)) {
		own := m.Instances[id]
		mm.Instances = map[string]map[string]float64{id: own}
		msg, err := json.Marshal(mm)
		if err != nil { // unreachable: validated floats always encode
			return nil, nil, fmt.Errorf("coord: encoding multipliers: %w", err)
		}
		keys = append(keys, ownKey(key, id))
		args = append(args, id, msg, len(own))
		for t, v := range own {
			args = append(args, t, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	return keys, args, nil
}

// parseOwnHash reads instance id's own hash h into m.Instances when it is
// of m's publication (its _at is m's); an older one (the instance no
// longer differs, and its hash waits to expire) or none adds nothing.
func parseOwnHash(m *multiplier.Set, id string, h map[string]string) error {
	if h[multFieldAt] != strconv.FormatInt(m.At.UnixMilli(), 10) {
		return nil
	}
	own := make(map[string]float64, len(h))
	for f, s := range h {
		if strings.HasPrefix(f, "_") {
			continue
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return fmt.Errorf("%w: multipliers tier %q of instance %q: %v", ErrBadReply, f, id, err)
		}
		own[f] = v
	}
	if m.Instances == nil {
		m.Instances = map[string]map[string]float64{}
	}
	m.Instances[id] = own
	return nil
}

// loadOwn reads into m the own factors of every instance listed as
// having some, published with m.
func loadOwn(ctx context.Context, c redis.UniversalClient, key string, m *multiplier.Set) error {
	ids, err := c.SMembers(ctx, ownIDsKey(key)).Result()
	if err != nil {
		return fmt.Errorf("coord: loading multipliers: %w", err)
	}
	for _, id := range ids {
		h, err := c.HGetAll(ctx, ownKey(key, id)).Result()
		if err != nil {
			return fmt.Errorf("coord: loading multipliers: %w", err)
		}
		if err := parseOwnHash(m, id, h); err != nil {
			return err
		}
	}
	return nil
}
