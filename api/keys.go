package api

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// inspectTimeout bounds a BucketInspector call.
const inspectTimeout = 2 * time.Second

// keyView is the answer of GET /v1/keys/{key}.
type keyView struct {
	Key           string `json:"key"`
	Tier          string `json:"tier,omitempty"`
	Assigned      bool   `json:"assigned"`
	EffectiveTier string `json:"effective_tier,omitempty"`
	Bucket        any    `json:"bucket"`
	BucketError   string `json:"bucket_error,omitempty"`
}

type assignBody struct {
	Tier string `json:"tier"`
}

// assignment is an assignment as the API shows it and ETags hash it.
type assignment struct {
	Key  string `json:"key"`
	Tier string `json:"tier"`
}

func keyETag(s Snapshot, key string) string {
	return etagOf(assignment{Key: key, Tier: s.Config.Assignments[key]}, s.rev("keys/"+key))
}

func keyParam(c echo.Context) (string, error) {
	key, err := param(c, "key")
	if err != nil {
		return "", err
	}
	return key, checkKey(key)
}

// getKey shows a key's tier and its bucket state; an unassigned key shows
// the tier it falls into (default_tier) and has no ETag.
func (sv *Server) getKey(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return err
	}
	snap, err := sv.read(c)
	if err != nil {
		return err
	}
	tier, ok := snap.Config.Assignments[key]
	v := keyView{Key: key, Tier: tier, Assigned: ok, EffectiveTier: tier}
	if !ok {
		v.EffectiveTier = snap.Config.DefaultTier
	}
	if sv.s.Inspector != nil {
		ctx, cancel := context.WithTimeout(c.Request().Context(), inspectTimeout)
		defer cancel()
		b, err := sv.s.Inspector.Inspect(ctx, key)
		if err != nil {
			v.BucketError = err.Error()
		} else {
			v.Bucket = b
		}
	}
	etag := ""
	if ok {
		etag = keyETag(snap, key)
	}
	return respond(c, http.StatusOK, etag, v)
}

// assignKey assigns a key to a tier: 201 for a new assignment, 200 when it
// replaces one (which needs If-Match).
func (sv *Server) assignKey(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return err
	}
	var b assignBody
	if err := sv.body(c, &b, at("assignments."+key)); err != nil {
		return err
	}
	if b.Tier == "" {
		return fieldErr("assignments."+key+".tier", "required")
	}
	existed := false
	snap, err := sv.write(c, func(s *Snapshot) (change, error) {
		old, ok := s.Config.Assignments[key]
		existed = ok
		if err := precondition(c, keyETag(*s, key), ok); err != nil {
			return change{}, err
		}
		if _, ok := s.Config.Tiers[b.Tier]; !ok {
			return change{}, fieldErr("assignments."+key+".tier", "no tier named %q", b.Tier)
		}
		if s.Config.Assignments == nil {
			s.Config.Assignments = map[string]string{}
		}
		s.Config.Assignments[key] = b.Tier
		s.touch("keys/" + key)
		ch := change{action: "key.assign", resource: "keys/" + key, after: assignment{key, b.Tier}}
		if ok {
			ch.before = assignment{key, old}
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
	return respond(c, code, keyETag(snap, key), assignment{key, b.Tier})
}

func (sv *Server) unassignKey(c echo.Context) error {
	key, err := keyParam(c)
	if err != nil {
		return err
	}
	_, err = sv.write(c, func(s *Snapshot) (change, error) {
		old, ok := s.Config.Assignments[key]
		if !ok {
			return change{}, httpErr(http.StatusNotFound, "", fmt.Sprintf("key %q has no assignment", key))
		}
		if err := precondition(c, keyETag(*s, key), true); err != nil {
			return change{}, err
		}
		delete(s.Config.Assignments, key)
		s.forget("keys/" + key)
		return change{action: "key.unassign", resource: "keys/" + key, before: assignment{key, old}}, nil
	})
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
