package overload

import (
	"fmt"
	"strings"
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
