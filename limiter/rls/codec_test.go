package rls

import (
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/throttledhq/throttled/limiter"
	"github.com/throttledhq/throttled/limiter/enforce"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// TestCodecWritesWhatProtoWrites: an answer written by hand with its
// metadata's kept encoding reads back as the answer, and the answer is left
// as it was; so do answers of other shapes (none, several statuses, fields
// of zero value, fields answer does not set); a message of another kind
// goes through the proto codec.
func TestCodecWritesWhatProtoWrites(t *testing.T) {
	c := newCodec()
	for name, res := range map[string]enforce.Result{
		"allowed": {Allowed: true, Tier: "free", Rule: "per-key"},
		"refused": {Status: 429, Tier: "free", Rule: "per-key", Decision: limiter.Decision{Reason: limiter.OverQuota}},
		"dry run": {Allowed: true, Tier: "premium", Rule: "search", DryRun: "over_quota",
			Decision: limiter.Decision{Fallback: true}},
		"own metadata": {},
	} {
		t.Run(name, func(t *testing.T) {
			md := metadataOf(&res)
			if name == "own metadata" {
				md = &structpb.Struct{Fields: map[string]*structpb.Value{"x": structpb.NewStringValue("y")}}
			}
			r := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK,
				Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{{Code: rlsv3.RateLimitResponse_OK,
					CurrentLimit:       &rlsv3.RateLimitResponse_RateLimit{Name: "per-key", RequestsPerUnit: 100},
					LimitRemaining:     7,
					DurationUntilReset: durationpb.New(1500 * time.Millisecond)}},
				ResponseHeadersToAdd: []*corev3.HeaderValue{{Key: "ratelimit", Value: `"free";r=7;t=2`}},
				DynamicMetadata:      md}
			if got := encodedMetadata(md) != nil; got != (name != "own metadata") {
				t.Fatalf("kept encoding: %v", got)
			}
			want := proto.Clone(r)
			data, err := c.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			got := new(rlsv3.RateLimitResponse)
			if err := proto.Unmarshal(data.Materialize(), got); err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(got, want) {
				t.Errorf("read back %v\nwant %v", got, want)
			}
			if r.DynamicMetadata != md {
				t.Errorf("the answer's metadata is %v after marshalling, want the shared Struct", r.DynamicMetadata)
			}
		})
	}
	for name, r := range map[string]*rlsv3.RateLimitResponse{
		"empty": {},
		"two statuses, the second not asked, no headers": {OverallCode: rlsv3.RateLimitResponse_OVER_LIMIT,
			Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{{Code: rlsv3.RateLimitResponse_OVER_LIMIT,
				CurrentLimit: &rlsv3.RateLimitResponse_RateLimit{Name: "search", RequestsPerUnit: 1 << 31,
					Unit: rlsv3.RateLimitResponse_RateLimit_DAY},
				DurationUntilReset: &durationpb.Duration{Seconds: 86400, Nanos: 999_999_999}},
				{Code: rlsv3.RateLimitResponse_OK}}},
		"a limit and a reset of zeros, an empty header": {OverallCode: rlsv3.RateLimitResponse_OK,
			Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{{Code: rlsv3.RateLimitResponse_OK,
				CurrentLimit: &rlsv3.RateLimitResponse_RateLimit{}, DurationUntilReset: &durationpb.Duration{}}},
			ResponseHeadersToAdd: []*corev3.HeaderValue{{}, {Key: "retry-after", Value: "1"}}},
		"more than answer sets": {OverallCode: rlsv3.RateLimitResponse_OK, RawBody: []byte("body"),
			RequestHeadersToAdd: []*corev3.HeaderValue{{Key: "x", RawValue: []byte("y")}}},
	} {
		want := proto.Clone(r)
		data, err := c.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got := new(rlsv3.RateLimitResponse)
		if err := proto.Unmarshal(data.Materialize(), got); err != nil || !proto.Equal(got, want) {
			t.Errorf("%s: read back %v, %v\nwant %v", name, got, err, want)
		}
	}
	data, err := c.Marshal(structpb.NewStringValue("other"))
	if err != nil {
		t.Fatal(err)
	}
	v := new(structpb.Value)
	if err := proto.Unmarshal(data.Materialize(), v); err != nil || v.GetStringValue() != "other" {
		t.Errorf("another message read back as %v, %v", v, err)
	}
}

// BenchmarkMarshalAnswer is an allowed answer's marshalling by gRPC's
// proto codec and by the server's codec.
func BenchmarkMarshalAnswer(b *testing.B) {
	res := enforce.Result{Allowed: true, Tier: "free", Rule: "per-key"}
	r := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK,
		Statuses: []*rlsv3.RateLimitResponse_DescriptorStatus{{Code: rlsv3.RateLimitResponse_OK,
			CurrentLimit:       &rlsv3.RateLimitResponse_RateLimit{Name: "per-key", RequestsPerUnit: 100},
			LimitRemaining:     7,
			DurationUntilReset: durationpb.New(1500 * time.Millisecond)}},
		DynamicMetadata: metadataOf(&res)}
	for _, h := range []string{"x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset", "ratelimit-policy", "ratelimit"} {
		r.ResponseHeadersToAdd = append(r.ResponseHeadersToAdd, &corev3.HeaderValue{Key: h, Value: "100"})
	}
	for name, c := range map[string]interface {
		Marshal(any) (mem.BufferSlice, error)
	}{"proto": encoding.GetCodecV2(protocodec.Name), "server": newCodec()} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Marshal(r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
