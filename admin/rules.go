package admin

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/throttledhq/throttled/policy"
)

// ruleList is the body of /v1/rules: the whole ordered list.
type ruleList struct {
	Rules []policy.Rule `json:"rules"`
}

func rulesETag(s policy.Snapshot) string { return etagOf(rulesOf(s), s.Revisions["rules"]) }

func rulesOf(s policy.Snapshot) ruleList { return ruleList{Rules: s.Rules()} }

func (sv *Server) getRules(c echo.Context) error {
	snap, err := sv.read(c)
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, rulesETag(snap), rulesOf(snap))
}

// putRules replaces the whole ordered list of rules; it always needs
// If-Match.
func (sv *Server) putRules(c echo.Context) error {
	var b ruleList
	if err := sv.body(c, &b, at("")); err != nil {
		return err
	}
	if b.Rules == nil {
		b.Rules = []policy.Rule{}
	}
	snap, err := sv.write(c, func(s *policy.Snapshot) (policy.Change, error) {
		if err := precondition(c, rulesETag(*s), true); err != nil {
			return policy.Change{}, err
		}
		before := rulesOf(*s)
		s.Config.Rules = b.Rules
		return policy.Change{Action: "rules.replace", Resource: "rules", Before: before, After: b}, nil
	})
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, rulesETag(snap), rulesOf(snap))
}
