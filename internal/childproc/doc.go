// Package childproc starts child processes that must not outlive the
// program: the benches' prometheus and CPU burner. On Linux the kernel
// kills such a child when its parent dies (the parent-death signal), so
// an interrupted or crashed bench leaves none behind.
package childproc
