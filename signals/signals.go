package signals

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ErrInvalidSettings is wrapped by every constructor error about bad settings.
var ErrInvalidSettings = errors.New("signals: invalid settings")

// Source reads the current signals. Read always returns a complete Signals
// whose values carry their own validity; the error, when not nil, joins what
// failed in this read (queries, gathering) for logs and never has to be
// checked to stay safe.
type Source interface {
	Read(ctx context.Context) (Signals, error)
}

// Kind names one signal.
type Kind uint8

// The signals, in the order Kinds lists them.
const (
	Latency    Kind = iota // a latency quantile, in seconds
	ErrorRatio             // failed requests / all requests, 0..1
	Saturation             // optional: how full the service is
)

// Kinds lists every signal.
func Kinds() []Kind { return []Kind{Latency, ErrorRatio, Saturation} }

// String is the signal's name as used in metric labels.
func (k Kind) String() string {
	switch k {
	case Latency:
		return "latency"
	case ErrorRatio:
		return "error_ratio"
	case Saturation:
		return "saturation"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Reason says why a Value is (in)valid.
type Reason uint8

// The reasons. Only OK goes with a valid Value.
const (
	OK          Reason = iota // valid
	Disabled                  // the signal is not configured
	QueryError                // the query failed (transport, timeout, PromQL)
	NoData                    // empty result, or the metric is missing
	NaN                       // the result is NaN
	Inf                       // the result is +Inf or -Inf
	Unsupported               // not a scalar/vector, or a metric of the wrong type
	Stale                     // the sample is more than MaxAge from now
	NoBaseline                // in-process: no earlier read to diff against
	NoTraffic                 // in-process: no request in the window
)

// String is the reason's name as used in metric labels.
func (r Reason) String() string {
	switch r {
	case OK:
		return "ok"
	case Disabled:
		return "disabled"
	case QueryError:
		return "query_error"
	case NoData:
		return "no_data"
	case NaN:
		return "nan"
	case Inf:
		return "inf"
	case Unsupported:
		return "unsupported"
	case Stale:
		return "stale"
	case NoBaseline:
		return "no_baseline"
	case NoTraffic:
		return "no_traffic"
	}
	return "reason(" + strconv.Itoa(int(r)) + ")"
}

// Value is one reading of one signal.
type Value struct {
	V      float64   // the reading; meaningless unless Valid
	At     time.Time // when the reading holds (the sample's timestamp)
	Valid  bool      // true only for a finite, fresh reading
	Reason Reason    // OK when Valid, else why not
	Err    error     // detail for QueryError and Unsupported, else nil
}

// valid returns a valid reading.
func valid(v float64, at time.Time) Value { return Value{V: v, At: at, Valid: true} }

// invalid returns an invalid reading; V is NaN so that a careless consumer
// never mistakes it for 0.
func invalid(r Reason, at time.Time, err error) Value {
	return Value{V: math.NaN(), At: at, Reason: r, Err: err}
}

// finite judges a number: a valid Value when finite, NaN or Inf otherwise.
func finite(v float64, at time.Time) Value {
	switch {
	case math.IsNaN(v):
		return invalid(NaN, at, nil)
	case math.IsInf(v, 0):
		return invalid(Inf, at, nil)
	}
	return valid(v, at)
}

// String prints "0.25" for a valid value and "invalid (reason: err)" otherwise.
func (v Value) String() string {
	if v.Valid {
		return strconv.FormatFloat(v.V, 'g', -1, 64)
	}
	if v.Err != nil {
		return fmt.Sprintf("invalid (%s: %v)", v.Reason, v.Err)
	}
	return "invalid (" + v.Reason.String() + ")"
}

// Signals is one reading of every signal.
type Signals struct {
	Latency    Value // seconds
	ErrorRatio Value // 0..1
	Saturation Value // Disabled unless configured
	Admitted   Rates // requests admitted per second, by tier
	// SaturationByInstance is the saturation of each instance whose series
	// carries an InstanceLabel (the fleet's, read from the tally), nil when
	// none does. Saturation is still their largest.
	SaturationByInstance map[string]Value
}

// InstanceLabel is the label naming the instance a saturation series
// belongs to, for Signals.SaturationByInstance.
const InstanceLabel = "instance"

// Get returns the value of signal k (an invalid Disabled value for an
// unknown kind).
func (s Signals) Get(k Kind) Value {
	switch k {
	case Latency:
		return s.Latency
	case ErrorRatio:
		return s.ErrorRatio
	case Saturation:
		return s.Saturation
	}
	return invalid(Disabled, time.Time{}, nil)
}

// set stores v as signal k.
func (s *Signals) set(k Kind, v Value) {
	switch k {
	case Latency:
		s.Latency = v
	case ErrorRatio:
		s.ErrorRatio = v
	case Saturation:
		s.Saturation = v
	}
}
