package spec

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var updateSchema = flag.Bool("update-schema", false, "rewrite spec/zkgen.schema.json from the kinds table")

// spec/zkgen.schema.json, which editors fetch by URL, is what the kinds
// table builds (SchemaJSON); go test ./spec -update-schema rewrites it.
func TestSchemaFile(t *testing.T) {
	have, err := os.ReadFile("zkgen.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(have, SchemaJSON) {
		return
	}
	if *updateSchema {
		if err := os.WriteFile("zkgen.schema.json", SchemaJSON, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Error("spec/zkgen.schema.json is not what the kinds table builds: go test ./spec -update-schema rewrites it")
}

// Every field a kind takes has a schema.
func TestEveryFieldHasASchema(t *testing.T) {
	for _, k := range kindTable {
		for _, f := range append(commonFields[1:], k.Fields...) {
			if _, ok := fieldSchemas[f]; !ok {
				t.Errorf("kind %s: field %s has no schema in fieldSchemas", k.Kind, f)
			}
		}
	}
}
