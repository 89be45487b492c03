package spec

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
)

// SchemaJSON is the JSON Schema (draft 2020-12) of the spec format, for
// editors (yaml-language-server) and other tools; `zkgen schema` prints it.
// Parse checks more than a schema can (overlapping paths, Go name
// collisions, recursive types), so a spec the schema accepts may still be
// refused, never the other way round.
//
// It is built from the kinds table (kindTable: each kind's fields and the
// ones it requires) and the schema of each field (fieldSchemas), so a kind
// is declared in one place; spec/zkgen.schema.json is the same text, kept
// for the editors that fetch it by URL (TestSchemaFile checks it).
var SchemaJSON = buildSchema()

// schemaBase is the schema's top level and the definitions the kinds
// share (acl, duration, payload, type); buildSchema adds a definition per
// kind and the resource definition that picks one by kind.
//
//go:embed schema_base.json
var schemaBase []byte

// fieldSchemas is the JSON Schema of each resource field, whatever kind
// takes it.
var fieldSchemas = map[string]any{
	"path": map[string]any{"type": "string", "pattern": "^(/[^/]+)+$",
		"description": "absolute below root; segments may be {name:int} or {name:string}"},
	"doc": map[string]any{"type": "string", "description": "text for the generated doc comment"},
	"acl": ref("acl"),
	"revocable": map[string]any{"description": "true, or {force_after: <duration>}", "oneOf": []any{
		map[string]any{"type": "boolean"},
		map[string]any{"type": "object", "additionalProperties": false, "required": []string{"force_after"},
			"properties": map[string]any{"force_after": ref("duration")}},
	}},
	"layout":   map[string]any{"enum": Layouts},
	"leases":   count(maxCount),
	"ttl":      map[string]any{"$ref": "#/$defs/duration", "description": "how long a lease lasts unless renewed (whole milliseconds)"},
	"item":     ref("payload"),
	"delivery": map[string]any{"enum": Deliveries},
	"dead_letter_after": with(count(maxCount), "description",
		"deliveries without an ack after which an item moves to the dead letters; needs delivery: at_least_once"),
	"prefetch": with(count(MaxPrefetch), "description",
		"items a consumer takes at a time and serves from memory (fewer requests an item; up to prefetch-1 taken items lost if the process dies); at_most_once only"),
	"priorities":   names(maxPriorities),
	"size":         count(maxCount),
	"participants": names(1000000),
	"payload":      ref("payload"),
	"notify":       map[string]any{"enum": Notifies},
	"member":       ref("payload"),
	"value":        ref("payload"),
	"partitions":   count(MaxPartitions),
	"names":        names(0),
	"instance":     with(ref("payload"), "description", "the payload of each instance (Curator's ServiceInstance payload)"),
	"name": map[string]any{"type": "string", "pattern": "^[!-.0-z|~]+$",
		"description": "the service's name in Curator's discovery (default: the resource's name); its instances are <path>/<name>/<id>"},
}

// fieldRules are what a field, when given, asks of the others.
var fieldRules = map[string]any{
	"dead_letter_after": map[string]any{"if": map[string]any{"required": []string{"dead_letter_after"}},
		"then": map[string]any{"required": []string{"delivery"},
			"properties": map[string]any{"delivery": map[string]any{"const": AtLeastOnce}}}},
	"prefetch": map[string]any{"if": map[string]any{"required": []string{"prefetch"}},
		"then": map[string]any{"properties": map[string]any{"delivery": map[string]any{"const": AtMostOnce}}}},
}

func ref(def string) map[string]any { return map[string]any{"$ref": "#/$defs/" + def} }

func count(most int) map[string]any {
	return map[string]any{"type": "integer", "minimum": 1, "maximum": most}
}

// names is a list of distinct snake_case names, at most most (0: no bound).
func names(most int) map[string]any {
	s := map[string]any{"type": "array", "minItems": 1, "uniqueItems": true,
		"items": map[string]any{"type": "string", "pattern": snakeRE.String()}}
	if most > 0 {
		s["maxItems"] = most
	}
	return s
}

func with(m map[string]any, k string, v any) map[string]any {
	m[k] = v
	return m
}

// buildSchema adds the kinds' definitions to schemaBase.
func buildSchema() []byte {
	var doc map[string]any
	if err := json.Unmarshal(schemaBase, &doc); err != nil {
		panic(fmt.Sprintf("spec: schema_base.json: %v", err))
	}
	defs := doc["$defs"].(map[string]any)
	var kinds []string
	var pick []any
	for _, k := range kindTable {
		name := "resource_" + string(k.Kind)
		defs[name] = kindSchema(k)
		kinds = append(kinds, string(k.Kind))
		pick = append(pick, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"kind": map[string]any{"const": k.Kind}}, "required": []string{"kind"}},
			"then": ref(name),
		})
	}
	defs["resource"] = map[string]any{"type": "object", "required": []string{"kind", "path"},
		"properties": map[string]any{"kind": map[string]any{"enum": kinds}}, "allOf": pick}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		panic(fmt.Sprintf("spec: the schema: %v", err))
	}
	return b.Bytes()
}

// kindSchema is the definition of a resource of kind k.
func kindSchema(k KindInfo) map[string]any {
	props := map[string]any{"kind": map[string]any{"const": k.Kind}}
	var rules []any
	for _, f := range append(slices.Clone(commonFields[1:]), k.Fields...) { // kind: above
		s, ok := fieldSchemas[f]
		if !ok {
			panic("spec: no schema for field " + f) // TestSchemaFile, at the latest
		}
		props[f] = s
		if r, ok := fieldRules[f]; ok {
			rules = append(rules, r)
		}
	}
	s := map[string]any{"type": "object", "additionalProperties": false,
		"required": append([]string{"kind", "path"}, k.Required...), "properties": props}
	if len(rules) > 0 {
		s["allOf"] = rules
	}
	return s
}
