package overload

// starved is the surge load while another process burns one of the
// machine's cores in the overload phase: the sidecar short of CPU (a
// throttled pod under its CPU limit, a noisy neighbour) exactly when the
// backend needs protecting. Its own slowness must not read as the
// backend's.
func starved(c float64) Scenario {
	s := base("starved", c, atQuota(c*0.25, c*2.5, c*0.25))
	s.Burn[During] = true
	return s
}
