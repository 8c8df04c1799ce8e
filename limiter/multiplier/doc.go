// Package multiplier is the contract between the controller, which computes
// a load multiplier per tier, and the enforcers, which apply it: the Set the
// controller publishes and the Source an enforcer reads. Both sides import
// this package and nothing of each other.
package multiplier
