package controller_test

import (
	"fmt"
	"math"
	"time"

	"github.com/throttledhq/throttled/controller"
)

func ExampleLaw_Step() {
	law, err := controller.NewLaw(controller.Settings{
		Tiers: []controller.Tier{
			{Name: "premium", Priority: 0, Beta: 0.9, Floor: 0.5},
			{Name: "free", Priority: 1, Beta: 0.5, Floor: 0.2},
		},
		Cooldown:    10 * time.Second,
		HoldTimeout: 30 * time.Second,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	p99 := func(seconds float64) controller.Input { // target: 500 ms
		return controller.Input{Signals: []controller.Signal{{Name: "latency_p99", Value: seconds, Target: 0.5, Valid: true}}}
	}
	st := law.Init(t0)
	for i, in := range []controller.Input{
		p99(0.9), p99(0.9), p99(0.9), p99(0.9), // overloaded by 1.8×: free cut by 1/1.8 to its floor, then premium
		p99(0.48),          // in the hysteresis band: hold
		p99(0.2), p99(0.2), // healthy: premium first, halfway back to the 1 it was cut from, each step
		p99(math.NaN()), {}, {}, {}, // no usable signal: hold; 30 s after the last usable one, recover
	} {
		now := t0.Add(time.Duration(i) * 10 * time.Second)
		st = law.Step(st, in, now)
		fmt.Printf("t=%3.0fs %-10v %v\n", now.Sub(t0).Seconds(), st.Condition, st)
	}
	// Output:
	// t=  0s overloaded premium=1.00 free=0.56 epoch=1
	// t= 10s overloaded premium=1.00 free=0.31 epoch=2
	// t= 20s overloaded premium=1.00 free=0.20 epoch=3
	// t= 30s overloaded premium=0.90 free=0.20 epoch=4
	// t= 40s band       premium=0.90 free=0.20 epoch=4
	// t= 50s healthy    premium=0.95 free=0.20 epoch=5
	// t= 60s healthy    premium=0.97 free=0.20 epoch=6
	// t= 70s no_signal  premium=0.97 free=0.20 epoch=6
	// t= 80s no_signal  premium=0.97 free=0.20 epoch=6
	// t= 90s no_signal  premium=1.00 free=0.20 epoch=7
	// t=100s no_signal  premium=1.00 free=0.30 epoch=8
}

// A surge behind an upstream with a 20 ms service time: the latency of the
// windows doubles, and the limit comes down from the first interval, then
// grows back once latency returns to the baseline with the limit in use.
func ExampleGradient_Step() {
	law, _ := controller.NewGradient(controller.GradientSettings{InitialLimit: 20})
	st := law.Init(time.Time{})
	now := time.Time{}
	for _, lat := range []time.Duration{20, 20, 40, 40, 30, 20} {
		now = now.Add(100 * time.Millisecond)
		st = law.Step(st, controller.Window{Samples: 50, Avg: lat * time.Millisecond, MaxInFlight: st.Permits()}, now)
		fmt.Println(st.Permits(), st.LastAction, st.Baseline.Round(time.Millisecond))
	}
	// Output:
	// 23 increase 20ms
	// 26 increase 20ms
	// 22 decrease 20ms
	// 18 decrease 20ms
	// 17 decrease 20ms
	// 20 increase 20ms
}
