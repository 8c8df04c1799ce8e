package overload

import (
	"fmt"
	"strings"

	"github.com/throttledhq/throttled/internal/enum"
)

// Phase is a third of a run.
type Phase uint8

const (
	Before Phase = iota // normal load
	During              // the overload: more load, or a slower backend
	After               // normal load again
	NumPhases
)

var phaseNames = [NumPhases]string{"before", "overload", "after"}

func (p Phase) String() string {
	if p < NumPhases {
		return phaseNames[p]
	}
	return fmt.Sprintf("Phase(%d)", uint8(p))
}

// Mode is what the stack in front of the backend does. Run only passes it
// to the StackFunc and names it in the report.
type Mode uint8

const (
	Controller Mode = iota // quotas, the adaptive controller and its inner loop
	Static                 // quotas and static limits only
	Off                    // a plain pass-through proxy
	numModes
)

var modeNames = [numModes]string{"controller", "static", "off"}

func (m Mode) String() string {
	if m < numModes {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// MarshalText writes the mode's name.
func (m Mode) MarshalText() ([]byte, error) { return []byte(m.String()), nil }

// ParseModes reads a --mode value: one mode's name, or "all" for every
// mode in the order controller, static, off.
func ParseModes(s string) ([]Mode, error) {
	if s == "all" {
		return []Mode{Controller, Static, Off}, nil
	}
	for m := range numModes {
		if modeNames[m] == s {
			return []Mode{m}, nil
		}
	}
	return nil, fmt.Errorf("%w %q: want %s or all", ErrUnknownMode, s, strings.Join(modeNames[:], ", "))
}

// Front is where the clients meet throttled: the sidecar proxy in front
// of the backend's listener, or the backend's own handler served in the
// stack's process behind throttled's net/http middleware or behind Echo
// with throttled's Echo middleware. Run passes it to the StackFunc and
// names it in the report.
type Front uint8

const (
	Proxy      Front = iota // the sidecar reverse proxy to Backend
	Middleware              // Handler behind the net/http middleware
	Echo                    // Handler behind an Echo server with the Echo middleware
)

var frontNames = enum.New[Front]("overload", "front", "proxy", "middleware", "echo")

func (f Front) String() string { return frontNames.String(f) }

// MarshalText writes the front's name.
func (f Front) MarshalText() ([]byte, error) { return []byte(f.String()), nil }

// ParseFront reads a --front value.
func ParseFront(s string) (Front, error) { return frontNames.Parse(s) }
