package rls

import (
	"unicode/utf8"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/encoding/protowire"
)

// The fields of a request as Envoy sends it, by number.
const (
	fieldDomain      = 1 // RateLimitRequest
	fieldDescriptors = 2
	fieldHitsAddend  = 3
	fieldEntries     = 1 // RateLimitDescriptor
	fieldEntryKey    = 1 // RateLimitDescriptor.Entry
	fieldEntryValue  = 2
)

// decodeRequest sets r from data, a RateLimitRequest's encoding, as
// proto.Unmarshal would, when data holds only its domain, descriptors of
// entries and hits_addend (Envoy's request unless a descriptor carries a
// limit override or hits of its own), in 2 allocations for one descriptor
// of up to 4 entries (5 beyond): the strings share one copy of data, the
// descriptors and entries share one block. ok is false (and r untouched) for anything else, for
// proto.Unmarshal to read. proto.Unmarshal made 10 allocations through
// reflection for a request of one descriptor of two entries.
func decodeRequest(data []byte, r *rlsv3.RateLimitRequest) (ok bool) {
	var count requestDecoder
	if !count.request(data) {
		return false
	}
	d := requestDecoder{fill: true, r: r, s: string(data)}
	if count.nd == 1 && count.ne <= len(oneDescriptor{}.e) {
		m := new(oneDescriptor)
		d.descs, d.dptr, d.ents, d.eptr = m.d[:], m.dp[:], m.e[:], m.ep[:]
	} else {
		d.descs, d.dptr = make([]ratelimitv3.RateLimitDescriptor, count.nd), make([]*ratelimitv3.RateLimitDescriptor, count.nd)
		d.ents, d.eptr = make([]ratelimitv3.RateLimitDescriptor_Entry, count.ne), make([]*ratelimitv3.RateLimitDescriptor_Entry, count.ne)
	}
	r.Reset()
	d.request(data)
	if count.nd > 0 {
		r.Descriptors = d.dptr[:count.nd:count.nd]
	}
	return true
}

// oneDescriptor is the memory of Envoy's usual request, one descriptor of
// up to 4 entries, in one allocation.
type oneDescriptor struct {
	d  [1]ratelimitv3.RateLimitDescriptor
	dp [1]*ratelimitv3.RateLimitDescriptor
	e  [4]ratelimitv3.RateLimitDescriptor_Entry
	ep [4]*ratelimitv3.RateLimitDescriptor_Entry
}

// requestDecoder walks a request twice: to check it and count its
// descriptors and entries, then (fill) to set r from s, data as a string.
type requestDecoder struct {
	fill   bool
	r      *rlsv3.RateLimitRequest
	s      string
	descs  []ratelimitv3.RateLimitDescriptor
	dptr   []*ratelimitv3.RateLimitDescriptor
	ents   []ratelimitv3.RateLimitDescriptor_Entry
	eptr   []*ratelimitv3.RateLimitDescriptor_Entry
	nd, ne int
}

// fields walks b, at offset base in the request, calling f with each
// field: its number and, for a length-delimited one, its value's offset in
// the request and its bytes, else its varint; false at another wire type,
// at bytes that are no field, or where f says so.
func fields(b []byte, base int, f func(num protowire.Number, bytes bool, at int, v []byte, x uint64) bool) bool {
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return false
		}
		off += n
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b[off:])
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b[off:])
		default:
			return false
		}
		if n < 0 || !f(num, typ == protowire.BytesType, base+off+n-len(v), v, x) {
			return false
		}
		off += n
	}
	return true
}

func (d *requestDecoder) request(b []byte) bool {
	return fields(b, 0, func(num protowire.Number, bytes bool, at int, v []byte, x uint64) bool {
		switch {
		case num == fieldDomain && bytes:
			s, ok := d.text(at, v)
			if d.fill {
				d.r.Domain = s
			}
			return ok
		case num == fieldDescriptors && bytes:
			return d.descriptor(at, v)
		case num == fieldHitsAddend && !bytes:
			if d.fill {
				d.r.HitsAddend = uint32(x)
			}
			return true
		}
		return false
	})
}

func (d *requestDecoder) descriptor(at int, b []byte) bool {
	first := d.ne
	var dd *ratelimitv3.RateLimitDescriptor
	if d.fill {
		dd = &d.descs[d.nd]
		d.dptr[d.nd] = dd
	}
	d.nd++
	ok := fields(b, at, func(num protowire.Number, bytes bool, at int, v []byte, _ uint64) bool {
		return num == fieldEntries && bytes && d.entry(at, v)
	})
	if d.fill && d.ne > first {
		dd.Entries = d.eptr[first:d.ne:d.ne]
	}
	return ok
}

func (d *requestDecoder) entry(at int, b []byte) bool {
	var e *ratelimitv3.RateLimitDescriptor_Entry
	if d.fill {
		e = &d.ents[d.ne]
		d.eptr[d.ne] = e
	}
	d.ne++
	return fields(b, at, func(num protowire.Number, bytes bool, at int, v []byte, _ uint64) bool {
		if !bytes || (num != fieldEntryKey && num != fieldEntryValue) {
			return false
		}
		s, ok := d.text(at, v)
		switch {
		case e == nil:
		case num == fieldEntryKey:
			e.Key = s
		default:
			e.Value = s
		}
		return ok
	})
}

// text is v, at offset at in the request, as a part of s when filling;
// false when v is not UTF-8 (proto.Unmarshal refuses the request then).
func (d *requestDecoder) text(at int, v []byte) (string, bool) {
	if !d.fill {
		return "", utf8.Valid(v)
	}
	return d.s[at : at+len(v)], true
}
