package multiplier

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// MaxEpoch is the largest valid epoch: epochs travel through Lua, whose
// numbers are doubles.
const MaxEpoch = 1 << 53

// MaxRate is the largest tier rate cap, in requests per second.
const MaxRate = 1e9

// ErrInvalid is wrapped by every error of [Set.Validate].
var ErrInvalid = errors.New("multiplier: invalid set")

// Set is one publication of the controller: a multiplier per tier, an epoch
// that never goes backwards, and the time of the step that produced it.
type Set struct {
	Tiers map[string]float64 // tier → multiplier in (0, max]
	// Rates caps the requests per second a tier may have admitted, across
	// every instance (tier-wide admission): tier → rate > 0. A tier absent
	// from Rates is not capped. Per-key multipliers cannot bound a tier made
	// of many clients each under its quota; this does.
	Rates map[string]float64
	Epoch uint64    // at most MaxEpoch
	At    time.Time // when the controller stepped
	// Reasons says, for a tier whose multiplier the controller moved, why
	// it last moved, in words ("decrease: latency 0.82s > target 0.25s");
	// Since is when. A tier absent from them has not moved (or was moved
	// by a controller that did not say). At most MaxReasonLen bytes each.
	Reasons map[string]string
	Since   map[string]time.Time
	// Knees and Cuts carry the controller's memory of its last cuts, so
	// that a new leader continues where the old one stood rather than from
	// its own shadow state: for a tier cut below the level it was cut from,
	// that level (tier → multiplier in (0, max]), and when it was last cut.
	// Enforcers ignore them.
	Knees map[string]float64
	Cuts  map[string]time.Time
	// Instances holds factors of single instances where they differ from
	// Tiers (a controller whose scope is the instance: a sidecar per pod,
	// each with its own backend): instance id → tier → multiplier in
	// (0, max]. An instance applies its own entry of a tier when there is
	// one, else the tier's in Tiers. Instance ids must not be empty; tier
	// names never contain "@".
	Instances map[string]map[string]float64
}

// InstanceSep joins the multipliers' hash name and an instance id in the
// name of the hash (and channel) of that instance's own factors. Tier
// names never contain it (enforce.NamePattern).
const InstanceSep = "@"

// MaxReasonLen bounds the bytes of one reason.
const MaxReasonLen = 256

// Validate reports every problem of s, each naming its tier, in tier
// order. Tier names must not be empty or start with "_" (reserved for the
// published hash's own fields); multipliers must be in (0, max].
func (s *Set) Validate(max float64) error {
	var errs []error
	if s.At.IsZero() {
		errs = append(errs, fmt.Errorf("%w: at is zero", ErrInvalid))
	}
	if s.Epoch > MaxEpoch {
		errs = append(errs, fmt.Errorf("%w: epoch %d exceeds 2^53", ErrInvalid, s.Epoch))
	}
	for _, t := range slices.Sorted(maps.Keys(s.Tiers)) {
		v := s.Tiers[t]
		switch {
		case t == "" || strings.HasPrefix(t, "_"):
			errs = append(errs, fmt.Errorf("%w: tier name %q must not be empty or start with '_'", ErrInvalid, t))
		case !(v > 0 && v <= max): // NaN fails too
			errs = append(errs, fmt.Errorf("%w: tier %q: multiplier %v must be in (0, %v]", ErrInvalid, t, v, max))
		}
	}
	for _, t := range slices.Sorted(maps.Keys(s.Rates)) {
		v := s.Rates[t]
		switch {
		case t == "" || strings.HasPrefix(t, "_"):
			errs = append(errs, fmt.Errorf("%w: rate tier name %q must not be empty or start with '_'", ErrInvalid, t))
		case !(v > 0 && v <= MaxRate): // NaN fails too
			errs = append(errs, fmt.Errorf("%w: tier %q: rate %v must be in (0, %g]", ErrInvalid, t, v, float64(MaxRate)))
		}
	}
	for _, t := range slices.Sorted(maps.Keys(s.Reasons)) {
		switch {
		case t == "" || strings.HasPrefix(t, "_"):
			errs = append(errs, fmt.Errorf("%w: reason tier name %q must not be empty or start with '_'", ErrInvalid, t))
		case len(s.Reasons[t]) > MaxReasonLen:
			errs = append(errs, fmt.Errorf("%w: tier %q: reason longer than %d bytes", ErrInvalid, t, MaxReasonLen))
		}
	}
	for _, t := range slices.Sorted(maps.Keys(s.Since)) {
		if t == "" || strings.HasPrefix(t, "_") {
			errs = append(errs, fmt.Errorf("%w: since tier name %q must not be empty or start with '_'", ErrInvalid, t))
		}
	}
	for _, t := range slices.Sorted(maps.Keys(s.Knees)) {
		switch v := s.Knees[t]; {
		case t == "" || strings.HasPrefix(t, "_"):
			errs = append(errs, fmt.Errorf("%w: knee tier name %q must not be empty or start with '_'", ErrInvalid, t))
		case !(v > 0 && v <= max):
			errs = append(errs, fmt.Errorf("%w: tier %q: knee %v must be in (0, %v]", ErrInvalid, t, v, max))
		}
	}
	for _, t := range slices.Sorted(maps.Keys(s.Cuts)) {
		if t == "" || strings.HasPrefix(t, "_") {
			errs = append(errs, fmt.Errorf("%w: cut tier name %q must not be empty or start with '_'", ErrInvalid, t))
		}
	}
	errs = append(errs, s.validateInstances(max)...)
	return errors.Join(errs...)
}

// validateInstances reports the problems of s.Instances, by instance then
// tier.
func (s *Set) validateInstances(max float64) []error {
	var errs []error
	for _, id := range slices.Sorted(maps.Keys(s.Instances)) {
		if id == "" {
			errs = append(errs, fmt.Errorf("%w: instance id must not be empty", ErrInvalid))
			continue
		}
		own := s.Instances[id]
		for _, t := range slices.Sorted(maps.Keys(own)) {
			switch v := own[t]; {
			case t == "" || strings.HasPrefix(t, "_") || strings.Contains(t, InstanceSep):
				errs = append(errs, fmt.Errorf("%w: instance %q: tier name %q must not be empty, start with '_' or contain %q",
					ErrInvalid, id, t, InstanceSep))
			case !(v > 0 && v <= max):
				errs = append(errs, fmt.Errorf("%w: instance %q: tier %q: multiplier %v must be in (0, %v]", ErrInvalid, id, t, v, max))
			}
		}
	}
	return errs
}

// Source gives the current multiplier of a tier (1 when healthy). It must
// be cheap: enforcers call it on every decision.
type Source interface {
	Multiplier(tier string) float64
}

// RateSource gives a tier's admission cap in requests per second across all
// instances, 0 when the tier is not capped. It must be cheap.
type RateSource interface {
	Rate(tier string) float64
}
