package enforce

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// HeaderDecision carries the reason of a refused check (over_quota or shed)
// to a gateway, so that it can answer 429 or 503 as the middleware would.
const HeaderDecision = "X-Throttled-Decision"

// maxCheckBody bounds the body of POST /v1/check.
const maxCheckBody = 64 << 10

// CheckRequest is the body of POST /v1/check: one query
// {"rule","key","tier","cost"}, or several in "checks" (not both).
type CheckRequest struct {
	Query
	Checks []Query `json:"checks,omitempty"`
}

// CheckAnswer is the JSON answer of POST /v1/check. A refused check's
// answer holds the fields of the middleware's Refusal body.
type CheckAnswer struct {
	Allowed bool `json:"allowed"`
	// Status is the middleware's: 200, 429 (over quota) or 503 (shed).
	Status            int    `json:"status"`
	Error             string `json:"error,omitempty"` // a refusal's message
	Reason            string `json:"reason"`          // allowed, over_quota or shed
	Fallback          bool   `json:"fallback"`        // decided while the shared store failed
	Tier              string `json:"tier,omitempty"`
	Rule              string `json:"rule,omitempty"` // of the reported (most restrictive) decision
	Limit             int64  `json:"limit"`
	Remaining         int64  `json:"remaining"`
	ResetAfterSeconds int64  `json:"reset_after_seconds"`
	RetryAfterSeconds int64  `json:"retry_after_seconds,omitempty"`
	Shadowed          bool   `json:"shadowed,omitempty"`
	// DryRun is the reason of the refusal a dry run let pass (Result.DryRun):
	// the check is allowed (200), and this is the answer it would have had.
	DryRun string `json:"dry_run,omitempty"`
	// StoreError is set when the store failed and no fallback decided: the
	// check was let through, as the middleware lets a request through.
	StoreError string         `json:"store_error,omitempty"`
	Checks     []CheckOutcome `json:"checks"`
}

// CheckOutcome is one query's part of a CheckAnswer.
type CheckOutcome struct {
	Rule              string `json:"rule"`
	Tier              string `json:"tier,omitempty"`
	Asked             bool   `json:"asked"` // false: an earlier check refused
	Reason            string `json:"reason,omitempty"`
	Fallback          bool   `json:"fallback,omitempty"`
	Limit             int64  `json:"limit,omitempty"`
	Remaining         int64  `json:"remaining,omitempty"`
	ResetAfterSeconds int64  `json:"reset_after_seconds,omitempty"`
	StoreError        string `json:"store_error,omitempty"`
}

// CheckHandler answers POST /v1/check for gateways that ask over HTTP
// (nginx auth_request, Traefik forwardAuth, Kong): it decides the body's
// queries through CheckKeys and answers as the middleware would, 200, 429
// or 503 with the rate-limit headers, Retry-After on a refusal and
// HeaderDecision, and a CheckAnswer body. Bad input gets 400
// {"error","field"} and spends nothing.
func (e *Enforcer) CheckHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeCheckError(w, http.StatusMethodNotAllowed, "", "method not allowed: POST a check")
			return
		}
		qs, field, err := readChecks(w, r)
		if err != nil {
			writeCheckError(w, http.StatusBadRequest, field, err.Error())
			return
		}
		out := make([]Outcome, len(qs))
		res, err := e.CheckKeys(r.Context(), qs, out)
		if qe := (*QueryError)(nil); errors.As(err, &qe) {
			field := qe.Field
			if len(qs) > 1 || qe.Field == "queries" {
				field = fmt.Sprintf("checks[%d].%s", qe.Index, qe.Field)
			}
			writeCheckError(w, http.StatusBadRequest, field, qe.Msg)
			return
		}
		res.WriteHeaders(w.Header())
		status := http.StatusOK
		if !res.Allowed {
			status = res.Status
			w.Header().Set(HeaderDecision, res.Reason().String())
		}
		body, _ := json.Marshal(answerOf(&res, qs, out))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write(append(body, '\n'))
	})
}

// readChecks reads a CheckRequest and returns its queries, or an error
// and the field it concerns.
func readChecks(w http.ResponseWriter, r *http.Request) ([]Query, string, error) {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxCheckBody))
	dec.DisallowUnknownFields()
	var req CheckRequest
	if err := dec.Decode(&req); err != nil {
		return nil, "body", fmt.Errorf("want a JSON check: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, "body", errors.New("want one JSON check, not more")
	}
	if len(req.Checks) == 0 {
		if req.Rule == "" {
			return nil, "rule", errors.New("required")
		}
		return []Query{req.Query}, "", nil
	}
	if req.Rule != "" || req.Key != "" || req.Tier != "" || req.Cost != 0 || len(req.Parts) > 0 {
		return nil, "checks", errors.New("give one check or checks, not both")
	}
	for i := range req.Checks {
		if req.Checks[i].Rule == "" {
			return nil, "checks[" + strconv.Itoa(i) + "].rule", errors.New("required")
		}
	}
	return req.Checks, "", nil
}

func answerOf(res *Result, qs []Query, out []Outcome) CheckAnswer {
	a := CheckAnswer{Allowed: res.Allowed, Status: http.StatusOK, Reason: res.Reason().String(),
		Fallback: res.Decision.Fallback, Tier: res.Tier, Rule: res.Rule, Limit: res.Decision.Limit,
		Remaining: res.Decision.Remaining, ResetAfterSeconds: ceilSeconds(res.Decision.ResetAfter),
		Shadowed: res.Shadowed, DryRun: res.DryRun, Checks: make([]CheckOutcome, len(qs))}
	if !res.Allowed {
		a.Status, a.RetryAfterSeconds = res.Status, res.RetryAfter
		a.Error = refusalMessage(res.Status)
	}
	if res.Err != nil {
		a.StoreError = res.Err.Error()
	}
	for i := range qs {
		o := &out[i]
		c := CheckOutcome{Rule: qs[i].Rule, Tier: o.Tier, Asked: o.Asked}
		switch {
		case o.Err != nil:
			c.StoreError = o.Err.Error()
		case o.Asked:
			d := &o.Decision
			c.Reason, c.Fallback, c.Limit, c.Remaining = d.Reason.String(), d.Fallback, d.Limit, d.Remaining
			c.ResetAfterSeconds = ceilSeconds(d.ResetAfter)
		}
		a.Checks[i] = c
	}
	return a
}

func writeCheckError(w http.ResponseWriter, status int, field, msg string) {
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
		Field string `json:"field,omitempty"`
	}{msg, field})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
