package rls

import (
	"math"
	"net/http"
	"strings"
	"sync"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/throttledhq/throttled/limiter/enforce"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// reply is the memory of an answer to a call of one descriptor (Envoy's
// usual call), in one allocation: the response, its status, limit and time
// to reset, and its headers. A call of more descriptors makes their
// statuses on their own.
type reply struct {
	resp    rlsv3.RateLimitResponse
	status  rlsv3.RateLimitResponse_DescriptorStatus
	statusP [1]*rlsv3.RateLimitResponse_DescriptorStatus
	limit   rlsv3.RateLimitResponse_RateLimit
	reset   durationpb.Duration
	hdr     [numHeaders]corev3.HeaderValue
	hdrP    [numHeaders]*corev3.HeaderValue
}

func answer(res *enforce.Result, qs []enforce.Query, out []enforce.Outcome) *rlsv3.RateLimitResponse {
	m := new(reply)
	resp := &m.resp
	resp.OverallCode = rlsv3.RateLimitResponse_OK
	if !res.Allowed {
		resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	resp.ResponseHeadersToAdd, resp.DynamicMetadata = m.headers(res), metadataOf(res)
	if len(qs) == 1 {
		m.statusP[0] = statusOf(qs[0].Rule, &out[0], &m.status, &m.limit, &m.reset)
		resp.Statuses = m.statusP[:]
		return resp
	}
	resp.Statuses = make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(qs))
	for i := range qs {
		resp.Statuses[i] = statusOf(qs[i].Rule, &out[i], new(rlsv3.RateLimitResponse_DescriptorStatus),
			new(rlsv3.RateLimitResponse_RateLimit), new(durationpb.Duration))
	}
	return resp
}

// statusOf fills st, the status of one descriptor: OVER_LIMIT when its
// refusal is the request's; its limit (in lim), remaining and time to
// reset (in reset) when it was decided.
func statusOf(rule string, o *enforce.Outcome, st *rlsv3.RateLimitResponse_DescriptorStatus,
	lim *rlsv3.RateLimitResponse_RateLimit, reset *durationpb.Duration) *rlsv3.RateLimitResponse_DescriptorStatus {
	st.Code = rlsv3.RateLimitResponse_OK
	if o.Refused {
		st.Code = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	if !o.Asked || o.Err != nil {
		return st
	}
	d := &o.Decision
	lim.Name = rule
	lim.RequestsPerUnit, lim.Unit = perUnit(d.Limit, o.Period)
	st.CurrentLimit = lim
	st.LimitRemaining = uint32(min(max(d.Remaining, 0), math.MaxUint32))
	nanos := d.ResetAfter.Nanoseconds() // as durationpb.New
	reset.Seconds, reset.Nanos = nanos/1e9, int32(nanos%1e9)
	st.DurationUntilReset = reset
	return st
}

// headerNames are the headers an answer may carry, in the order sent:
// canonical (as http.Header keys them) and lower case (as HTTP/2 sends
// them).
var headerNames = func() (names [numHeaders][2]string) {
	for i, n := range [numHeaders]string{enforce.HeaderLimit, enforce.HeaderRemaining, enforce.HeaderReset,
		enforce.HeaderPolicy, enforce.HeaderRateLimit, enforce.HeaderRetryAfter, enforce.HeaderDecision} {
		names[i] = [2]string{http.CanonicalHeaderKey(n), strings.ToLower(n)}
	}
	return names
}()

const numHeaders = 7

// headerMaps are emptied header maps for headers, reused so that an
// answer does not make a map.
var headerMaps = sync.Pool{New: func() any { return make(http.Header, numHeaders) }}

// headers are the middleware's headers for res, and HeaderDecision when
// refused, in m's memory.
func (m *reply) headers(res *enforce.Result) []*corev3.HeaderValue {
	h := headerMaps.Get().(http.Header)
	defer func() { clear(h); headerMaps.Put(h) }()
	res.WriteHeaders(h)
	if !res.Allowed {
		h[headerNames[numHeaders-1][0]] = []string{res.Reason().String()}
	}
	n := 0
	for _, name := range headerNames {
		if v := h[name[0]]; len(v) > 0 {
			m.hdr[n] = corev3.HeaderValue{Key: name[1], Value: v[0]}
			m.hdrP[n] = &m.hdr[n]
			n++
		}
	}
	return m.hdrP[:n:n]
}

// metadata is what an answer's dynamic metadata says; answers that say the
// same share one made Struct.
type metadata struct {
	decision, tier, rule, dryRun string
	fallback                     bool
}

// maxMetadata bounds the Structs kept: the tiers, rules and reasons of a
// policy make a few dozen; beyond the bound an answer makes its own.
const maxMetadata = 4096

var (
	metadataMu   sync.RWMutex
	metadataMade = map[metadata]*structpb.Struct{}
	// metadataEnc is each kept Struct's encoding as the answer's field
	// (codec.go), made with it.
	metadataEnc = map[*structpb.Struct][]byte{}
)

// metadataOf is the decision as dynamic metadata, which Envoy keeps under
// the namespace envoy.filters.http.ratelimit (for access logs and local
// reply mappers). In a dry run, dry_run names the refusal it let pass.
// The Struct is shared between answers that say the same: read only.
func metadataOf(res *enforce.Result) *structpb.Struct {
	k := metadata{decision: res.Reason().String(), tier: res.Tier, rule: res.Rule, dryRun: res.DryRun,
		fallback: res.Decision.Fallback}
	metadataMu.RLock()
	s, ok := metadataMade[k]
	metadataMu.RUnlock()
	if ok {
		return s
	}
	s = k.build()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(s)
	metadataMu.Lock()
	if len(metadataMade) < maxMetadata && err == nil {
		metadataMade[k], metadataEnc[s] = s, metadataField(b)
	}
	metadataMu.Unlock()
	return s
}

// encodedMetadata is the encoding of s made by metadataOf, nil for another
// Struct.
func encodedMetadata(s *structpb.Struct) []byte {
	if s == nil {
		return nil
	}
	metadataMu.RLock()
	b := metadataEnc[s]
	metadataMu.RUnlock()
	return b
}

func (k metadata) build() *structpb.Struct {
	f := map[string]*structpb.Value{
		"decision": structpb.NewStringValue(k.decision),
		"fallback": structpb.NewBoolValue(k.fallback),
		"tier":     structpb.NewStringValue(k.tier),
		"rule":     structpb.NewStringValue(k.rule),
	}
	if k.dryRun != "" {
		f["dry_run"] = structpb.NewStringValue(k.dryRun)
	}
	return &structpb.Struct{Fields: f}
}
