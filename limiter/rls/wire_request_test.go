package rls

import (
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

func entries(kv ...string) *ratelimitv3.RateLimitDescriptor {
	d := &ratelimitv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// requestCases are requests' encodings and whether decodeRequest reads
// them (else proto.Unmarshal does).
func requestCases(t testing.TB) map[string]struct {
	data []byte
	hand bool
} {
	enc := func(r *rlsv3.RateLimitRequest) []byte {
		b, err := proto.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	envoy := enc(&rlsv3.RateLimitRequest{Domain: "throttled", Descriptors: []*ratelimitv3.RateLimitDescriptor{
		entries("rule", "per-key", "api_key", "k1")}})
	return map[string]struct {
		data []byte
		hand bool
	}{
		"empty":        {nil, true},
		"envoy's":      {envoy, true},
		"domain twice": {append(protowire.AppendString(protowire.AppendTag(nil, fieldDomain, protowire.BytesType), "other"), envoy...), true},
		"several descriptors, hits, an empty descriptor and entry": {enc(&rlsv3.RateLimitRequest{Domain: "d", HitsAddend: 7,
			Descriptors: []*ratelimitv3.RateLimitDescriptor{entries("rule", "a", "tier", "t", "x", "é"), {}, entries("", "")}}), true},
		"a descriptor's hits_addend": {enc(&rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{{
			Entries: entries("rule", "a").Entries, HitsAddend: wrapperspb.UInt64(0)}}}), false},
		"negative hits": {enc(&rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{{
			Entries: entries("rule", "a").Entries, IsNegativeHits: true}}}), false},
		"an unknown field": {protowire.AppendVarint(protowire.AppendTag(envoy, 9, protowire.VarintType), 1), false},
		"a value not UTF-8": {protowire.AppendBytes(protowire.AppendTag(nil, fieldDescriptors, protowire.BytesType),
			protowire.AppendBytes(protowire.AppendTag(nil, fieldEntries, protowire.BytesType),
				protowire.AppendBytes(protowire.AppendTag(nil, fieldEntryValue, protowire.BytesType), []byte{'a', 0xc0}))), false},
		"a domain not UTF-8":    {protowire.AppendBytes(protowire.AppendTag(nil, fieldDomain, protowire.BytesType), []byte{0xff}), false},
		"truncated":             {envoy[:len(envoy)-3], false},
		"a varint domain":       {protowire.AppendVarint(protowire.AppendTag(nil, fieldDomain, protowire.VarintType), 3), false},
		"a hits_addend of 2^33": {protowire.AppendVarint(protowire.AppendTag(nil, fieldHitsAddend, protowire.VarintType), 1<<33), true},
	}
}

// TestDecodeRequestAsProto: the server's codec reads every request as
// proto.Unmarshal does (the same message, or an error both ways), by hand
// for Envoy's requests of domain, descriptors of entries and hits_addend,
// by proto.Unmarshal otherwise.
func TestDecodeRequestAsProto(t *testing.T) {
	c := newCodec()
	for name, tc := range requestCases(t) {
		t.Run(name, func(t *testing.T) {
			want := new(rlsv3.RateLimitRequest)
			wantErr := proto.Unmarshal(tc.data, want)
			if hand := decodeRequest(tc.data, new(rlsv3.RateLimitRequest)); hand != tc.hand {
				t.Errorf("decoded by hand: %v, want %v", hand, tc.hand)
			}
			got := &rlsv3.RateLimitRequest{Domain: "left over"}
			err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(tc.data)}, got)
			if (err != nil) != (wantErr != nil) || (err == nil && !proto.Equal(got, want)) {
				t.Errorf("read %v, %v; proto.Unmarshal %v, %v", got, err, want, wantErr)
			}
		})
	}
}

// FuzzDecodeRequest: whatever decodeRequest reads, proto.Unmarshal reads
// alike.
func FuzzDecodeRequest(f *testing.F) {
	for _, tc := range requestCases(f) {
		f.Add(tc.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := new(rlsv3.RateLimitRequest)
		if !decodeRequest(data, got) {
			return
		}
		want := new(rlsv3.RateLimitRequest)
		if err := proto.Unmarshal(data, want); err != nil || !proto.Equal(got, want) {
			t.Errorf("decodeRequest %v; proto.Unmarshal %v, %v", got, want, err)
		}
	})
}

// BenchmarkUnmarshalRequest is Envoy's request of one descriptor of two
// entries read by gRPC's proto codec and by the server's codec.
func BenchmarkUnmarshalRequest(b *testing.B) {
	data := requestCases(b)["envoy's"].data
	for name, c := range map[string]interface {
		Unmarshal(mem.BufferSlice, any) error
	}{"proto": newCodec().proto, "server": newCodec()} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(data)}, new(rlsv3.RateLimitRequest)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
