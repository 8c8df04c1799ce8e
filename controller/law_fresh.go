package controller

import "time"

// read is the step's signals: in.Fresh when one of them is usable, else
// in.Signals.
//
// Signals read through a window (a Prometheus's rate over seconds, scraped
// every interval) lag the service by about half the window plus the
// scrape: after an overload ends they keep reporting it for the window's
// length, and when one begins they report it late. Trusted as they are,
// they cut tiers the inner loop already holds within the target (which
// sheds only what the service could serve) and hold a cut for the window's
// length after the service recovered. The instance's own measurements over
// the last period (Fresh: its upstream's latency and errors, its inner
// loop's refused fraction) say what the service does now, so when one is
// usable they decide the condition and size the step: a cut or a hold the
// window asks for is vetoed by a fresh reading within the target, and a
// release does not wait for the window to forget. The window decides when
// nothing fresh is usable: an instance without traffic in the period, a
// controller-only replica.
func (l *Law) read(in Input, now time.Time) []Signal {
	for _, s := range in.Fresh {
		if l.Usable(s, now) {
			return in.Fresh
		}
	}
	return in.Signals
}

// idle reports whether the inner loop refused nothing over the period:
// sigs, the step's signals (see [Law.read]), include at least one usable
// refused fraction (a Signal with a Keep) and each says 1, all kept. Idle alone is no proof of room: a service held
// at its knee by a cut can queue at the inner loop's limit without a
// refusal (measured in `throttled bench overload --scenario instances`:
// idle at room 1.5 to 1.8). Idle with deep room (≥ kneeRelease, which
// the law already reads as "the overload is over") is a backend back
// from a slowdown or a surge that ended, and the law then releases at
// once. Without an inner loop to ask it is false, and a tier climbs back
// by its growth factor a period.
func (l *Law) idle(sigs []Signal, now time.Time) bool {
	asked := false
	for _, s := range sigs {
		if s.Keep > 0 && l.Usable(s, now) {
			if s.Keep != 1 {
				return false
			}
			asked = true
		}
	}
	return asked
}

// starved reports whether this process is short of CPU (in.CPUWait at or
// above StarvedAt); an overload then holds instead of cutting. A starved
// sidecar measures its own waiting in every latency it reads and in its
// inner loop's refusals, and a cut sized by its readings (and by admitted
// rates that collapsed with it) would shed what the backend can serve,
// premium next once free is at its floor, and hold the caps long after
// the CPU came back. The inner loop still bounds what reaches the backend
// meanwhile.
func (l *Law) starved(in Input) bool { return in.CPUWait >= l.s.StarvedAt }
