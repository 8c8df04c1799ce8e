package api

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// ruleList is the body of /v1/rules: the whole ordered list.
type ruleList struct {
	Rules []Rule `json:"rules"`
}

func rulesETag(s Snapshot) string { return etagOf(rulesOf(s), s.rev("rules")) }

func rulesOf(s Snapshot) ruleList {
	if s.Config.Rules == nil {
		return ruleList{Rules: []Rule{}}
	}
	return ruleList{Rules: s.Config.Rules}
}

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
		b.Rules = []Rule{}
	}
	snap, err := sv.write(c, func(s *Snapshot) (change, error) {
		if err := precondition(c, rulesETag(*s), true); err != nil {
			return change{}, err
		}
		before := rulesOf(*s)
		s.Config.Rules = b.Rules
		s.touch("rules")
		return change{action: "rules.replace", resource: "rules", before: before, after: b}, nil
	})
	if err != nil {
		return err
	}
	return respond(c, http.StatusOK, rulesETag(snap), rulesOf(snap))
}
