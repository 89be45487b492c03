package runtime

// GeneratedCodeV1 is referenced by every file zkgen generates. Generated
// code and this package must come from compatible zkgen versions; when a
// release changes what generated code relies on, this constant is renamed
// (GeneratedCodeV2, ...), so a mismatch fails to compile with an error that
// names it — regenerate with the zkgen that matches your runtime — instead
// of misbehaving at run time.
const GeneratedCodeV1 = true
