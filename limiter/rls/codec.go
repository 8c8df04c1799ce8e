package rls

import (
	"fmt"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// codec is the server's gRPC codec: gRPC's proto codec, except for the
// answers, which are written by appendResponse (wire.go) without
// protobuf's reflection, their dynamic metadata (one of metadataOf's shared
// Structs) from the Struct's encoding made once with it. The Struct, a map
// of four or five fields, took two thirds of an answer's marshalling by
// proto.Marshal, which sizes and writes every field through reflection.
// The bytes on the wire read back as the answer (codec_test.go).
type codec struct{ proto encoding.CodecV2 }

func newCodec() codec { return codec{proto: encoding.GetCodecV2(protocodec.Name)} }

func (c codec) Name() string { return protocodec.Name }

// Unmarshal reads a request by decodeRequest (wire_request.go) when it can,
// anything else by the proto codec.
func (c codec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*rlsv3.RateLimitRequest)
	if !ok {
		return c.proto.Unmarshal(data, v)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	if decodeRequest(buf.ReadOnlyData(), r) {
		return nil
	}
	return proto.Unmarshal(buf.ReadOnlyData(), r)
}

func (c codec) Marshal(v any) (mem.BufferSlice, error) {
	r, ok := v.(*rlsv3.RateLimitResponse)
	if !ok {
		return c.proto.Marshal(v)
	}
	b, err := marshalResponse(r)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

// marshalResponse is proto.Marshal(r): by appendResponse with r's
// metadata from its kept encoding, or by proto.Marshal when r's metadata
// has none or r carries more than answer sets.
func marshalResponse(r *rlsv3.RateLimitResponse) ([]byte, error) {
	if md := encodedMetadata(r.GetDynamicMetadata()); md != nil || r.GetDynamicMetadata() == nil {
		if b, ok := appendResponse(make([]byte, 0, responseSize(r)+len(md)), r, md); ok {
			return b, nil
		}
	}
	b, err := proto.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("rls: marshal the answer: %w", err)
	}
	return b, nil
}

// metadataField is b, an encoded Struct, as RateLimitResponse's field
// dynamic_metadata.
func metadataField(b []byte) []byte {
	out := protowire.AppendTag(nil, dynamicMetadataField, protowire.BytesType)
	return protowire.AppendBytes(out, b)
}

const dynamicMetadataField = 6
