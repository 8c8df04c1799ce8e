package admin

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/policy"
)

// tierView is a tier with its name: the body of /v1/tiers requests and
// responses.
type tierView struct {
	Name string `json:"name"`
	policy.Tier
}

type tierList struct {
	Tiers []tierView `json:"tiers"`
}

// tierETag is the ETag of tier name in s.
func tierETag(s policy.Snapshot, name string) string {
	return etagOf(tierView{Name: name, Tier: s.Config.Tiers[name]}, s.Revisions["tiers/"+name])
}

func (sv *Server) listTiers(c echo.Context) error {
	snap, err := sv.read(c)
	if err != nil {
		return err
	}
	list := tierList{Tiers: []tierView{}}
	revs := make([]int64, 0, len(snap.Config.Tiers))
	for _, n := range sortedKeys(snap.Config.Tiers) {
		list.Tiers = append(list.Tiers, tierView{Name: n, Tier: snap.Config.Tiers[n]})
		revs = append(revs, snap.Revisions["tiers/"+n])
	}
	return respond(c, http.StatusOK, etagOf([]any{list, revs}, 0), list)
}

func (sv *Server) getTier(c echo.Context) error {
	name := c.Param("name")
	snap, err := sv.read(c)
	if err != nil {
		return err
	}
	t, ok := snap.Config.Tiers[name]
	if !ok {
		return noTier(name)
	}
	return respond(c, http.StatusOK, tierETag(snap, name), tierView{Name: name, Tier: t})
}

func noTier(name string) error {
	return httpErr(http.StatusNotFound, "", fmt.Sprintf("no tier named %q", name))
}

// createTier adds a tier; the body names it. An existing name is 409.
func (sv *Server) createTier(c echo.Context) error {
	var v tierView
	err := sv.body(c, &v, func(b []byte) string {
		if n := peekName(b); n != "" {
			return "tiers." + n
		}
		return ""
	})
	if err != nil {
		return err
	}
	if v.Name == "" {
		return fieldErr("name", "required: the new tier's name")
	}
	snap, err := sv.write(c, func(s *policy.Snapshot) (policy.Change, error) {
		if _, ok := s.Config.Tiers[v.Name]; ok {
			return policy.Change{}, httpErr(http.StatusConflict, "name", fmt.Sprintf("tier %q exists: PUT /v1/tiers/%s replaces it", v.Name, v.Name))
		}
		if s.Config.Tiers == nil {
			s.Config.Tiers = map[string]policy.Tier{}
		}
		s.Config.Tiers[v.Name] = v.Tier
		return policy.Change{Action: "tier.create", Resource: "tiers/" + v.Name, After: v}, nil
	})
	if err != nil {
		return err
	}
	c.Response().Header().Set("Location", "/v1/tiers/"+v.Name)
	return respond(c, http.StatusCreated, tierETag(snap, v.Name), v)
}

// replaceTier replaces an existing tier (404 if absent: POST creates).
func (sv *Server) replaceTier(c echo.Context) error {
	name := c.Param("name")
	var v tierView
	if err := sv.body(c, &v, at("tiers."+name)); err != nil {
		return err
	}
	if v.Name != "" && v.Name != name {
		return fieldErr("tiers."+name+".name", "%q differs from the name in the URL", v.Name)
	}
	v.Name = name
	snap, err := sv.write(c, func(s *policy.Snapshot) (policy.Change, error) {
		old, ok := s.Config.Tiers[name]
		if !ok {
			return policy.Change{}, noTier(name)
		}
		if err := precondition(c, tierETag(*s, name), true); err != nil {
			return policy.Change{}, err
		}
		s.Config.Tiers[name] = v.Tier
		return policy.Change{Action: "tier.replace", Resource: "tiers/" + name,
			Before: tierView{Name: name, Tier: old}, After: v}, nil
	})
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, tierETag(snap, name), v)
}

// deleteTier removes a tier. It refuses with 409 while key assignments,
// default_tier or anonymous_tier name it; its pin goes with it.
func (sv *Server) deleteTier(c echo.Context) error {
	name := c.Param("name")
	_, err := sv.write(c, func(s *policy.Snapshot) (policy.Change, error) {
		old, ok := s.Config.Tiers[name]
		if !ok {
			return policy.Change{}, noTier(name)
		}
		if err := precondition(c, tierETag(*s, name), true); err != nil {
			return policy.Change{}, err
		}
		if refs := tierRefs(s.Config, name); len(refs) > 0 {
			return policy.Change{}, httpErr(http.StatusConflict, refs[0],
				fmt.Sprintf("tier %q is still used by %s", name, strings.Join(refs, ", ")))
		}
		s.DropTier(name)
		return policy.Change{Action: "tier.delete", Resource: "tiers/" + name,
			Before: tierView{Name: name, Tier: old}}, nil
	})
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// tierRefs lists what names tier (at most a few assignments).
func tierRefs(cfg policy.Config, tier string) []string {
	var refs []string
	if cfg.DefaultTier == tier {
		refs = append(refs, "default_tier")
	}
	if cfg.AnonymousTier == tier {
		refs = append(refs, "anonymous_tier")
	}
	if cfg.UnmatchedTier == tier {
		refs = append(refs, "unmatched_tier")
	}
	var keys []string
	for k, t := range cfg.Assignments {
		if t == tier {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i == 3 {
			refs = append(refs, fmt.Sprintf("and %d more assignments", len(keys)-i))
			break
		}
		refs = append(refs, "assignments."+k)
	}
	return refs
}
