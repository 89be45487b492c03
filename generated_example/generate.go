// Package example holds zkgen's example: the spec zkgen.yaml, the package
// coord generated from it, and cmd/demo, a program that uses it.
package example

//go:generate go tool zkgen generate -f zkgen.yaml
