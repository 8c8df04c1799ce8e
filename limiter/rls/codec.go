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

// codec is the server's gRPC codec: gRPC's proto codec, except that an
// answer whose dynamic metadata is one of the shared Structs (metadataOf)
// is written with that Struct's bytes, encoded once when it was made. The
// Struct is a map of four or five fields, which protobuf sizes and writes
// through reflection on every answer: about two thirds of the answer's
// marshalling. The bytes on the wire are those proto.Marshal writes.
type codec struct{ proto encoding.CodecV2 }

func newCodec() codec { return codec{proto: encoding.GetCodecV2(protocodec.Name)} }

func (c codec) Name() string { return protocodec.Name }

func (c codec) Unmarshal(data mem.BufferSlice, v any) error { return c.proto.Unmarshal(data, v) }

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

// marshalResponse is proto.Marshal(r), with r's metadata written from its
// encoding when it has one. r is not to be read meanwhile.
func marshalResponse(r *rlsv3.RateLimitResponse) ([]byte, error) {
	md := r.GetDynamicMetadata()
	enc := encodedMetadata(md)
	if enc == nil {
		return proto.Marshal(r)
	}
	r.DynamicMetadata = nil
	defer func() { r.DynamicMetadata = md }()
	opt := proto.MarshalOptions{UseCachedSize: true}
	n := opt.Size(r)
	b, err := opt.MarshalAppend(make([]byte, 0, n+len(enc)), r)
	if err != nil {
		return nil, fmt.Errorf("rls: marshal the answer: %w", err)
	}
	// Field 6 (dynamic_metadata) follows fields 1 to 3: the order proto.Marshal writes.
	return append(b, enc...), nil
}

// metadataField is b, an encoded Struct, as RateLimitResponse's field
// dynamic_metadata.
func metadataField(b []byte) []byte {
	out := protowire.AppendTag(nil, dynamicMetadataField, protowire.BytesType)
	return protowire.AppendBytes(out, b)
}

const dynamicMetadataField = 6
