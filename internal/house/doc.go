// Package house holds the tests of the house rules in DESIGN.md that no single package can check
// about itself, such as which packages may import what. It has no code of its own.
package house
