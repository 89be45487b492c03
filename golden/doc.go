// Package golden is zkgen's end-to-end corpus: spec files with the exact
// output zkgen must produce for them. It has no code of its own besides its
// test; "go test ./golden" runs the command line (internal/cli, in-process)
// on every case and compares.
//
// # Layout
//
// Every directory golden/<case>/ is one case, named after what it tests, and
// holds a zkgen.yaml and one of:
//
//   - stderr.txt: a bad spec. "zkgen validate -f zkgen.yaml", run in the case
//     directory, must exit 1, print nothing on stdout and print exactly
//     stderr.txt on stderr (one "zkgen.yaml:line:col: field: message" per
//     problem, sorted by position). "zkgen generate" must print the same and
//     write nothing.
//   - the expected output tree: a good spec. Running "zkgen generate" on a
//     copy of zkgen.yaml must exit 0 silently and produce exactly the other
//     files of the case directory, byte for byte: every generated file must
//     be there with the same content, and no file of the case may be left
//     ungenerated. A second generate must find every file unchanged.
//
// Expected Go outputs are ordinary Go packages of the module, so "go build
// ./..." and "go vet ./..." also check that the generated code compiles.
//
// TestGeneratedExample also regenerates the committed generated_example/
// from its zkgen.yaml and requires the result to match what is committed
// (zkgen diff must find nothing).
//
// # Adding a case and updating expectations
//
// Create golden/<case>/zkgen.yaml, plus an empty stderr.txt when the spec is
// meant to be rejected. Then run
//
//	go test ./golden -update
//
// which rewrites every stderr.txt with the errors zkgen prints now, rewrites
// every expected output tree (removing files that are no longer generated),
// and regenerates generated_example/. Read what changed (git diff golden
// generated_example) before committing it: the point of the corpus is that
// every change of output is looked at. -update never turns a bad-spec case
// into a good one or the reverse; a case whose spec stops failing (or starts
// failing) is reported as a test failure.
package golden
