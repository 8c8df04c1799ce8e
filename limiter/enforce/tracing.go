package enforce

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	oteltrace "go.opentelemetry.io/otel/trace"
)

// trace adds the decision to the request's span. Without a configured
// tracer provider the span is a no-op that does not record, and this costs
// one context lookup.
func trace(ctx context.Context, res *Result) {
	span := oteltrace.SpanFromContext(ctx)
	if !res.Limited || !span.IsRecording() {
		return
	}
	span.SetAttributes(
		attribute.String("throttled.tier", res.Tier),
		attribute.String("throttled.rule", res.Rule),
		attribute.String("throttled.decision", res.Decision.Label()),
		attribute.Int64("throttled.remaining", res.Decision.Remaining),
		attribute.Bool("throttled.shadowed", res.Shadowed),
	)
}
