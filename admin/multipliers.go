package admin

import (
	"math"
	"net/http"
	"sort"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/policy"
)

// multiplierView is one tier's multiplier in GET /v1/multipliers: the value
// in force (a pin's when pinned), where it comes from (the source label of
// throttled_effective_multiplier: controller, pin, stale or none), how old
// it is, and why it last moved and since when.
type multiplierView struct {
	Tier       string           `json:"tier"`
	Multiplier float64          `json:"multiplier"`
	Source     string           `json:"source"`
	UpdatedAt  *time.Time       `json:"updated_at,omitempty"`
	Age        *policy.Duration `json:"age,omitempty"`
	Reason     string           `json:"reason,omitempty"`
	Since      *time.Time       `json:"since,omitempty"`
	Pin        *policy.Pin      `json:"pin,omitempty"`
}

// sourceNone is the source of a multiplier nobody set: 1 applies.
const sourceNone = "none"

// age is d rounded to what tells: milliseconds under a second, tenths of
// a second under a minute, whole seconds beyond ("4.5s", not
// "4.524232514s").
func age(d time.Duration) policy.Duration {
	switch {
	case d < time.Second:
		return policy.Duration(d.Round(time.Millisecond))
	case d < time.Minute:
		return policy.Duration(d.Round(100 * time.Millisecond))
	}
	return policy.Duration(d.Round(time.Second))
}

type multiplierList struct {
	Multipliers []multiplierView `json:"multipliers"`
}

// pinBody is the body of POST/PUT /v1/multipliers/{tier}/pin.
type pinBody struct {
	Multiplier float64         `json:"multiplier"`
	TTL        policy.Duration `json:"ttl"`
}

// listMultipliers shows every configured tier (and any other tier the
// MultiplierReader knows), ordered by priority then name.
func (sv *Server) listMultipliers(c echo.Context) error {
	snap, err := sv.read(c)
	if err != nil {
		return err
	}
	now := sv.s.Now()
	views := map[string]*multiplierView{}
	for name := range snap.Config.Tiers {
		views[name] = &multiplierView{Tier: name, Multiplier: 1, Source: sourceNone}
	}
	if sv.s.Multipliers != nil {
		for _, st := range sv.s.Multipliers.Multipliers() {
			v := &multiplierView{Tier: st.Tier, Multiplier: st.Multiplier, Source: st.Source, Reason: st.Reason}
			if !st.Since.IsZero() {
				since := st.Since.UTC()
				v.Since = &since
			}
			if math.IsNaN(v.Multiplier) || math.IsInf(v.Multiplier, 0) { // JSON cannot carry it
				v.Multiplier, v.Source = 0, "invalid ("+st.Source+")"
			}
			if !st.UpdatedAt.IsZero() {
				at, a := st.UpdatedAt, age(max(now.Sub(st.UpdatedAt), 0))
				v.UpdatedAt, v.Age = &at, &a
			}
			views[st.Tier] = v
		}
	}
	for name, p := range snap.ActivePins(now) {
		if v := views[name]; v != nil {
			v.Multiplier, v.Source, v.Pin = p.Multiplier, "pin", &p
			v.Reason = "pinned until " + p.Until.UTC().Format(time.RFC3339)
		}
	}
	list := multiplierList{Multipliers: make([]multiplierView, 0, len(views))}
	for _, v := range views {
		list.Multipliers = append(list.Multipliers, *v)
	}
	prio := func(t string) int { return snap.Config.Tiers[t].Priority }
	sort.Slice(list.Multipliers, func(i, j int) bool {
		a, b := list.Multipliers[i].Tier, list.Multipliers[j].Tier
		if prio(a) != prio(b) {
			return prio(a) < prio(b)
		}
		return a < b
	})
	return respond(c, http.StatusOK, etagOf(list, 0), list)
}

func pinETag(s policy.Snapshot, tier string) string {
	return etagOf(s.Pins[tier], s.Revisions["pins/"+tier])
}

// activePin returns tier's pin if it is in force.
func activePin(s policy.Snapshot, tier string, now time.Time) (policy.Pin, bool) {
	p, ok := s.Pins[tier]
	return p, ok && p.Active(now)
}

func (sv *Server) getPin(c echo.Context) error {
	tier := c.Param("tier")
	snap, err := sv.read(c)
	if err != nil {
		return err
	}
	if _, ok := snap.Config.Tiers[tier]; !ok {
		return noTier(tier)
	}
	p, ok := activePin(snap, tier, sv.s.Now())
	if !ok {
		return httpErr(http.StatusNotFound, "", "tier "+tier+" is not pinned")
	}
	return respond(c, http.StatusOK, pinETag(snap, tier), p)
}

// putPin pins a tier's multiplier for a TTL: 201 for a new pin, 200 when it
// replaces one in force (which needs If-Match).
func (sv *Server) putPin(c echo.Context) error {
	tier := c.Param("tier")
	var b pinBody
	f := "pins." + tier
	if err := sv.body(c, &b, at(f)); err != nil {
		return err
	}
	if err := policy.CheckMultiplier(f+".multiplier", b.Multiplier); err != nil {
		return err
	}
	if ttl := policy.Durations(time.Second, policy.MaxPinTTL); b.TTL.D() < ttl.MinDur || b.TTL.D() > ttl.MaxDur {
		return fieldErr(f+".ttl", "%v: %s", b.TTL, ttl.Want())
	}
	existed := false
	snap, err := sv.write(c, func(s *policy.Snapshot) (policy.Change, error) {
		if _, ok := s.Config.Tiers[tier]; !ok {
			return policy.Change{}, noTier(tier)
		}
		old, ok := s.Pins[tier] // pruneExpiredPins left only pins in force
		existed = ok
		if err := precondition(c, pinETag(*s, tier), ok); err != nil {
			return policy.Change{}, err
		}
		if s.Pins == nil {
			s.Pins = map[string]policy.Pin{}
		}
		p := policy.Pin{Tier: tier, Multiplier: b.Multiplier, Until: s.UpdatedAt.Add(b.TTL.D())}
		s.Pins[tier] = p
		ch := policy.Change{Action: "pin.set", Resource: "pins/" + tier, After: p}
		if ok {
			ch.Before = old
		}
		return ch, nil
	})
	if err != nil {
		return err
	}
	code := http.StatusCreated
	if existed {
		code = http.StatusOK
	}
	return respond(c, code, pinETag(snap, tier), snap.Pins[tier])
}

func (sv *Server) deletePin(c echo.Context) error {
	tier := c.Param("tier")
	_, err := sv.write(c, func(s *policy.Snapshot) (policy.Change, error) {
		old, ok := s.Pins[tier]
		if !ok {
			return policy.Change{}, httpErr(http.StatusNotFound, "", "tier "+tier+" is not pinned")
		}
		if err := precondition(c, pinETag(*s, tier), true); err != nil {
			return policy.Change{}, err
		}
		delete(s.Pins, tier)
		return policy.Change{Action: "pin.delete", Resource: "pins/" + tier, Before: old}, nil
	})
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
