package rls

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/throttledhq/throttled/limiter/enforce"
	"github.com/throttledhq/throttled/limiter/instrument"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Descriptor entry keys that name the rule and the tier; the values of all
// other entries make the key.
const (
	EntryRule = "rule"
	EntryTier = "tier"
)

// MaxEntries bounds the entries of one descriptor (Envoy's actions make a
// handful); the descriptors of one request are bounded by
// enforce.MaxQueries.
const MaxEntries = 32

// ShouldRateLimit decides req: the RateLimitService method.
func (s *Server) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	var (
		ans  answered
		resp *rlsv3.RateLimitResponse
		err  error
	)
	if s.work != nil {
		resp, err = s.work.decide(ctx, req, &ans)
	} else {
		resp, err = s.decide(ctx, req, &ans)
	}
	code := answerOK
	switch {
	case err != nil:
		code = status.Code(err).String()
		ans.code, ans.reason = failed(status.Code(err))
	case resp.GetOverallCode() == rlsv3.RateLimitResponse_OVER_LIMIT:
		code = answerOverLimit
	}
	s.answers.WithLabelValues(code).Inc()
	if s.set.Requests != nil {
		s.set.Requests.Count(ans.tier, ans.code, ans.reason)
	}
	return resp, err
}

// answered is a call's answer as throttled_requests_total counts it: the
// status its gateway is to answer (200 for OK; 429 or 503 for OVER_LIMIT,
// as the middleware would) and why.
type answered struct {
	tier   string
	code   int
	reason string
}

// failed is the status and reason counted for a call answered with the
// gRPC error code c.
func failed(c codes.Code) (int, string) {
	switch c {
	case codes.InvalidArgument:
		return http.StatusBadRequest, instrument.ReasonInvalid
	case codes.NotFound:
		return http.StatusNotFound, instrument.ReasonInvalid
	case codes.Canceled, codes.DeadlineExceeded:
		return statusClientGone, instrument.ReasonClientGone
	case codes.Unavailable:
		return http.StatusServiceUnavailable, instrument.ReasonStoreError
	}
	return http.StatusInternalServerError, instrument.ReasonStoreError
}

// statusClientGone is the status of a request whose client went away
// before its answer (nginx's 499, as the pipeline counts it).
const statusClientGone = 499

// decide answers req. Its frame and checked's are kept small: they lie on
// the gRPC handler's stack above the enforcer's and the store's frames, and
// a call whose frames pass the 8 KB its goroutine starts with pays for
// copying the stack to a larger one (runtime.newstack): the error paths are
// out of line, and the call's memory (queries, outcomes, the Result) is
// pooled rather than on the stack.
func (s *Server) decide(ctx context.Context, req *rlsv3.RateLimitRequest, ans *answered) (*rlsv3.RateLimitResponse, error) {
	descs := req.GetDescriptors()
	if err := s.validate(req.GetDomain(), len(descs)); err != nil {
		return nil, err
	}
	m := callPool.Get().(*callMemory)
	resp, err := s.checked(ctx, req, descs, m, ans)
	m.release()
	return resp, err
}

// validate refuses a request for another domain or of no or too many
// descriptors.
func (s *Server) validate(domain string, n int) error {
	if domain != s.set.Domain {
		return status.Errorf(codes.NotFound, "rls: unknown domain %q (this server serves %q)", domain, s.set.Domain)
	}
	if n == 0 || n > enforce.MaxQueries {
		return status.Errorf(codes.InvalidArgument, "rls: %d descriptors, want 1..%d", n, enforce.MaxQueries)
	}
	return nil
}

// checked decides descs, mapped onto queries in m, and answers.
func (s *Server) checked(ctx context.Context, req *rlsv3.RateLimitRequest, descs []*ratelimitv3.RateLimitDescriptor,
	m *callMemory, ans *answered) (*rlsv3.RateLimitResponse, error) {
	qs, out, parts := m.qs[:], m.out[:], m.parts[:0]
	if len(descs) > 1 {
		qs, out, parts = make([]enforce.Query, len(descs)), make([]enforce.Outcome, len(descs)), nil
	}
	for i, d := range descs {
		if err := queryOf(&qs[i], d, req.GetHitsAddend(), parts); err != nil {
			return nil, badDescriptor(i, err)
		}
	}
	res := &m.res
	var err error
	*res, err = s.check.CheckKeys(ctx, qs, out)
	ans.tier = res.Tier
	if err != nil {
		return checkFailed(err, len(qs), ans)
	}
	if res.Allowed && res.Err != nil {
		return nil, storeError(res.Err)
	}
	ans.code, ans.reason = http.StatusOK, res.AnswerReason()
	if !res.Allowed {
		ans.code = res.Status
	}
	return answer(res, qs, out), nil
}

func badDescriptor(i int, err error) error {
	return status.Errorf(codes.InvalidArgument, "rls: descriptors[%d]: %v", i, err)
}

// callMemory is the memory of decide for Envoy's usual call of one
// descriptor (of a few entries), pooled: nothing of it outlives the call.
type callMemory struct {
	qs    [1]enforce.Query
	out   [1]enforce.Outcome
	parts [4]string
	res   enforce.Result
}

var callPool = sync.Pool{New: func() any { return new(callMemory) }}

func (m *callMemory) release() {
	*m = callMemory{}
	callPool.Put(m)
}

// checkFailed answers a check that failed with err: a descriptor asking
// for more than its bucket holds is refused, any other bad query is
// INVALID_ARGUMENT.
func checkFailed(err error, n int, ans *answered) (*rlsv3.RateLimitResponse, error) {
	var qe *enforce.QueryError
	switch {
	case errors.As(err, &qe) && qe.Field == "cost":
		*ans = answered{code: http.StatusTooManyRequests, reason: instrument.ReasonOverQuota}
		return beyondCapacity(n, qe.Index), nil
	case errors.As(err, &qe):
		return nil, status.Errorf(codes.InvalidArgument, "rls: descriptors[%d]: %s: %s", qe.Index, qe.Field, qe.Msg)
	}
	return nil, status.Errorf(codes.Internal, "rls: %v", err)
}

// beyondCapacity answers a request whose descriptor at index asks for more
// hits than its bucket can ever hold: OVER_LIMIT, as the reference
// service answers (an INVALID_ARGUMENT, an error, is admitted by Envoy's
// default failure_mode_deny: false). Nothing was spent.
func beyondCapacity(n, index int) *rlsv3.RateLimitResponse {
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OVER_LIMIT,
		Statuses: make([]*rlsv3.RateLimitResponse_DescriptorStatus, n)}
	for i := range resp.Statuses {
		code := rlsv3.RateLimitResponse_OK
		if i == index {
			code = rlsv3.RateLimitResponse_OVER_LIMIT
		}
		resp.Statuses[i] = &rlsv3.RateLimitResponse_DescriptorStatus{Code: code}
	}
	return resp
}

// storeError is the answer to a check the store failed on with no
// fallback deciding it: UNAVAILABLE, so that Envoy's failure_mode_deny
// decides; the caller's own cancellation or deadline as such.
func storeError(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	return status.Errorf(codes.Unavailable, "rls: the store failed and no fallback decided: %v", err)
}

// queryOf maps one descriptor onto a query (see the package doc); its
// Parts are appended to parts.
func queryOf(q *enforce.Query, d *ratelimitv3.RateLimitDescriptor, hits uint32, parts []string) error {
	*q = enforce.Query{Parts: parts}
	entries := d.GetEntries()
	if len(entries) > MaxEntries {
		return fmt.Errorf("%d entries: at most %d", len(entries), MaxEntries)
	}
	for _, e := range entries {
		switch k, v := e.GetKey(), e.GetValue(); k {
		case EntryRule, EntryTier:
			f := &q.Rule
			if k == EntryTier {
				f = &q.Tier
			}
			if *f != "" {
				return fmt.Errorf("two %q entries", k)
			}
			*f = v
		default:
			q.Parts = append(q.Parts, v)
		}
	}
	q.Key = strings.Join(q.Parts, "|")
	switch {
	case q.Rule == "":
		return fmt.Errorf("no %q entry naming a rule", EntryRule)
	case d.GetLimit() != nil:
		return errors.New("limit overrides are not supported: throttled's rules set the limits")
	case d.GetIsNegativeHits():
		return errors.New("is_negative_hits is not supported")
	}
	q.Cost = int64(hits)
	if h := d.GetHitsAddend(); h != nil { // set, 0 included: the proto's override
		q.Cost, q.Peek = int64(min(h.GetValue(), math.MaxInt64)), h.GetValue() == 0
	}
	return nil
}

var units = [...]struct {
	d    time.Duration
	unit rlsv3.RateLimitResponse_RateLimit_Unit
}{
	{time.Second, rlsv3.RateLimitResponse_RateLimit_SECOND},
	{time.Minute, rlsv3.RateLimitResponse_RateLimit_MINUTE},
	{time.Hour, rlsv3.RateLimitResponse_RateLimit_HOUR},
	{24 * time.Hour, rlsv3.RateLimitResponse_RateLimit_DAY},
}

// perUnit expresses limit per period in Envoy's units: per the shortest
// unit at least as long as the period (per day beyond a day), rounded down
// and at least 1. 10 per 10s is 60 per minute.
func perUnit(limit int64, period time.Duration) (uint32, rlsv3.RateLimitResponse_RateLimit_Unit) {
	u := units[len(units)-1]
	for _, c := range units {
		if period <= c.d {
			u = c
			break
		}
	}
	n := math.Floor(float64(limit) * float64(u.d) / float64(max(period, 1)))
	return uint32(min(max(n, 1), math.MaxUint32)), u.unit
}
