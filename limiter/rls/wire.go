package rls

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/durationpb"
)

// The fields of an answer as the server makes it (answer), by number, in
// envoy.service.ratelimit.v3 and envoy.config.core.v3.
const (
	fieldOverallCode    = 1 // RateLimitResponse
	fieldStatuses       = 2
	fieldResponseHeader = 3
	fieldCode           = 1 // DescriptorStatus
	fieldCurrentLimit   = 2
	fieldLimitRemaining = 3
	fieldResetAfter     = 4
	fieldPerUnit        = 1 // RateLimit
	fieldUnit           = 2
	fieldName           = 3
	fieldKey            = 1 // HeaderValue
	fieldValue          = 2
	fieldSeconds        = 1 // Duration
	fieldNanos          = 2
)

// appendResponse appends r's wire encoding, with md (metadataField's) as
// its dynamic metadata, as proto.Marshal would write it, without
// protobuf's reflection. ok is false when r carries anything answer does
// not set (then b is returned as it was, for proto.Marshal to write r).
func appendResponse(b []byte, r *rlsv3.RateLimitResponse, md []byte) (_ []byte, ok bool) {
	if !plain(r) {
		return b, false
	}
	b = appendVarint(b, fieldOverallCode, uint64(r.OverallCode))
	for _, st := range r.Statuses {
		b = protowire.AppendTag(b, fieldStatuses, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeStatus(st)))
		b = appendVarint(b, fieldCode, uint64(st.Code))
		if l := st.CurrentLimit; l != nil {
			b = protowire.AppendTag(b, fieldCurrentLimit, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(sizeLimit(l)))
			b = appendVarint(b, fieldPerUnit, uint64(l.RequestsPerUnit))
			b = appendVarint(b, fieldUnit, uint64(l.Unit))
			b = appendString(b, fieldName, l.Name)
		}
		b = appendVarint(b, fieldLimitRemaining, uint64(st.LimitRemaining))
		if d := st.DurationUntilReset; d != nil {
			b = protowire.AppendTag(b, fieldResetAfter, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(sizeDuration(d)))
			b = appendVarint(b, fieldSeconds, uint64(d.Seconds))
			b = appendVarint(b, fieldNanos, uint64(int64(d.Nanos)))
		}
	}
	for _, h := range r.ResponseHeadersToAdd {
		b = protowire.AppendTag(b, fieldResponseHeader, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(sizeHeader(h)))
		b = appendString(b, fieldKey, h.Key)
		b = appendString(b, fieldValue, h.Value)
	}
	return append(b, md...), true
}

// plain reports whether r holds only what appendResponse writes.
func plain(r *rlsv3.RateLimitResponse) bool {
	if len(r.RequestHeadersToAdd) > 0 || len(r.RawBody) > 0 || r.Quota != nil || len(r.ProtoReflect().GetUnknown()) > 0 {
		return false
	}
	for _, st := range r.Statuses {
		if st == nil || st.Quota != nil || len(st.ProtoReflect().GetUnknown()) > 0 {
			return false
		}
	}
	for _, h := range r.ResponseHeadersToAdd {
		if h == nil || len(h.RawValue) > 0 || len(h.ProtoReflect().GetUnknown()) > 0 {
			return false
		}
	}
	return true
}

// responseSize bounds appendResponse's bytes for r (md aside).
func responseSize(r *rlsv3.RateLimitResponse) int {
	n := 11
	for _, st := range r.Statuses {
		n += 1 + protowire.SizeBytes(sizeStatus(st))
	}
	for _, h := range r.ResponseHeadersToAdd {
		n += 1 + protowire.SizeBytes(sizeHeader(h))
	}
	return n
}

func sizeStatus(st *rlsv3.RateLimitResponse_DescriptorStatus) int {
	n := sizeVarint(uint64(st.Code)) + sizeVarint(uint64(st.LimitRemaining))
	if st.CurrentLimit != nil {
		n += 1 + protowire.SizeBytes(sizeLimit(st.CurrentLimit))
	}
	if st.DurationUntilReset != nil {
		n += 1 + protowire.SizeBytes(sizeDuration(st.DurationUntilReset))
	}
	return n
}

func sizeLimit(l *rlsv3.RateLimitResponse_RateLimit) int {
	return sizeVarint(uint64(l.RequestsPerUnit)) + sizeVarint(uint64(l.Unit)) + sizeString(l.Name)
}

func sizeDuration(d *durationpb.Duration) int {
	return sizeVarint(uint64(d.Seconds)) + sizeVarint(uint64(int64(d.Nanos)))
}

func sizeHeader(h *corev3.HeaderValue) int { return sizeString(h.Key) + sizeString(h.Value) }

// sizeVarint and sizeString are a field's size with its one-byte tag (the
// fields here are numbered below 16); a zero value is not written.
func sizeVarint(v uint64) int {
	if v == 0 {
		return 0
	}
	return 1 + protowire.SizeVarint(v)
}

func sizeString(s string) int {
	if s == "" {
		return 0
	}
	return 1 + protowire.SizeBytes(len(s))
}

func appendVarint(b []byte, field protowire.Number, v uint64) []byte {
	if v == 0 {
		return b
	}
	return protowire.AppendVarint(protowire.AppendTag(b, field, protowire.VarintType), v)
}

func appendString(b []byte, field protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	return protowire.AppendString(protowire.AppendTag(b, field, protowire.BytesType), s)
}
