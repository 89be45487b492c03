package spec

import _ "embed"

// SchemaJSON is the JSON Schema (draft 2020-12) of the spec format, for
// editors (yaml-language-server) and other tools; `zkgen schema` prints it.
// Parse checks more than a schema can (overlapping paths, Go name
// collisions, recursive types), so a spec the schema accepts may still be
// refused, never the other way round.
//
//go:embed zkgen.schema.json
var SchemaJSON []byte
