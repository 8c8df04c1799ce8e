// Package fakeclock is a settable clock for tests: stores, limiters and
// loops take its Now as their time source.
package fakeclock

import (
	"sync/atomic"
	"time"
)

// Clock holds a time with microsecond resolution. Its methods are safe for
// concurrent use.
type Clock struct{ us atomic.Int64 }

// New returns a clock set to t.
func New(t time.Time) *Clock {
	c := &Clock{}
	c.Set(t)
	return c
}

// Now is the clock's time.
func (c *Clock) Now() time.Time { return time.UnixMicro(c.us.Load()) }

// Set moves the clock to t (backwards too).
func (c *Clock) Set(t time.Time) { c.us.Store(t.UnixMicro()) }

// Add moves the clock by d (backwards when d is negative).
func (c *Clock) Add(d time.Duration) { c.us.Add(d.Microseconds()) }
