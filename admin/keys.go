package admin

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/policy"
)

// inspectTimeout bounds a BucketInspector call.
const inspectTimeout = 2 * time.Second

// keyView is the answer of GET /v1/keys/{key}.
type keyView struct {
	Key           string                `json:"key"`
	Tier          string                `json:"tier,omitempty"`
	Assigned      bool                  `json:"assigned"`
	EffectiveTier string                `json:"effective_tier,omitempty"`
	Anonymous     bool                  `json:"anonymous,omitempty"` // not believed: through the middleware its client is its IP
	Unlimited     bool                  `json:"unlimited,omitempty"` // the effective tier is unlimited: never refused by a rule
	Bucket        []enforce.BucketState `json:"bucket"`
	BucketError   string                `json:"bucket_error,omitempty"`
}

type assignBody struct {
	Tier string `json:"tier"`
}

// assignment is an assignment as the API shows it and ETags hash it.
type assignment struct {
	Key  string `json:"key"`
	Tier string `json:"tier"`
}

// Paging of GET /v1/keys.
const (
	DefaultKeysPage = 100
	MaxKeysPage     = 1000
)

// keyList is the answer of GET /v1/keys: a page of assignments in key
// order, and the cursor of the next page ("" on the last).
type keyList struct {
	Keys       []assignment `json:"keys"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

// listKeys lists the assignments in byte order of their keys, a page at a
// time: ?limit=N (1..MaxKeysPage, default DefaultKeysPage) and ?cursor= the
// next_cursor of the page before. A cursor is the last key of its page,
// base64url-encoded, so paging is stable while keys are added and removed:
// each key present throughout is listed exactly once.
func (sv *Server) listKeys(c echo.Context) error {
	n, after, err := pageParams(c)
	if err != nil {
		return err
	}
	snap, err := sv.read(c)
	if err != nil {
		return err
	}
	keys := sortedKeys(snap.Config.Assignments)
	i := sort.SearchStrings(keys, after)
	if after != "" && i < len(keys) && keys[i] == after {
		i++
	}
	list := keyList{Keys: []assignment{}}
	for _, k := range keys[i:min(i+n, len(keys))] {
		list.Keys = append(list.Keys, assignment{Key: k, Tier: snap.Config.Assignments[k]})
	}
	if i+n < len(keys) {
		list.NextCursor = base64.RawURLEncoding.EncodeToString([]byte(keys[i+n-1]))
	}
	return c.JSON(http.StatusOK, list)
}

// pageParams reads ?limit= and ?cursor= (the key after which the page
// starts; "" from the first).
func pageParams(c echo.Context) (n int, after string, err error) {
	n = DefaultKeysPage
	if q, ok := c.QueryParams()["limit"]; ok {
		v, err := strconv.Atoi(q[0])
		if err != nil || v < 1 || v > MaxKeysPage || len(q) > 1 {
			return 0, "", fieldErr("limit", "%q: want one integer in 1..%d", clip([]byte(strings.Join(q, ","))), MaxKeysPage)
		}
		n = v
	}
	if q, ok := c.QueryParams()["cursor"]; ok {
		b, err := base64.RawURLEncoding.DecodeString(q[0])
		if err != nil || len(q) > 1 || len(b) == 0 || policy.CheckKey(string(b)) != nil {
			return 0, "", fieldErr("cursor", "%q: want the next_cursor of a previous page", clip([]byte(strings.Join(q, ","))))
		}
		after = string(b)
	}
	return n, after, nil
}

func keyETag(s policy.Snapshot, key string) string {
	return etagOf(assignment{Key: key, Tier: s.Config.Assignments[key]}, s.Revisions["keys/"+key])
}

func keyParam(c echo.Context) (string, error) {
	key, err := param(c, "key")
	if err != nil {
		return "", err
	}
	return key, policy.CheckKey(key)
}

// getKey shows a key's tier and its bucket state; an unassigned key shows
// the tier enforcement gives it (the Inspector's KeyTier: the anonymous tier
// unless identity.unassigned_keys is default_tier) and has no ETag.
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
	if !ok && sv.s.Inspector != nil {
		believed := false
		v.EffectiveTier, believed = sv.s.Inspector.KeyTier(key)
		v.Anonymous = !believed
	}
	v.Unlimited = snap.Config.Tiers[v.EffectiveTier].Unlimited
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
	snap, err := sv.write(c, func(s *policy.Snapshot) (policy.Change, error) {
		old, ok := s.Config.Assignments[key]
		existed = ok
		if err := precondition(c, keyETag(*s, key), ok); err != nil {
			return policy.Change{}, err
		}
		if _, ok := s.Config.Tiers[b.Tier]; !ok {
			return policy.Change{}, fieldErr("assignments."+key+".tier", "no tier named %q", b.Tier)
		}
		if s.Config.Assignments == nil {
			s.Config.Assignments = map[string]string{}
		}
		s.Config.Assignments[key] = b.Tier
		ch := policy.Change{Action: "key.assign", Resource: "keys/" + key, After: assignment{key, b.Tier}}
		if ok {
			ch.Before = assignment{key, old}
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
	_, err = sv.write(c, func(s *policy.Snapshot) (policy.Change, error) {
		old, ok := s.Config.Assignments[key]
		if !ok {
			return policy.Change{}, httpErr(http.StatusNotFound, "", fmt.Sprintf("key %q has no assignment", key))
		}
		if err := precondition(c, keyETag(*s, key), true); err != nil {
			return policy.Change{}, err
		}
		delete(s.Config.Assignments, key)
		return policy.Change{Action: "key.unassign", Resource: "keys/" + key, Before: assignment{key, old}}, nil
	})
	if err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}
