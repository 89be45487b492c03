package templates

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/spec"
)

// emitTypes emits a Go struct, JSON-tagged, for every type declared with
// fields, in spec order. Types declared with go_type are the user's own and
// are referenced, not emitted.
func emitTypes(f *jen.File, s *spec.Spec) {
	for _, t := range s.Types {
		if t.GoType != "" {
			continue
		}
		f.Comment(fmt.Sprintf("%s is the payload type %s declared in the spec; it is stored as JSON.", t.GoName, t.Name))
		fields := make([]jen.Code, len(t.Fields))
		for i, fd := range t.Fields {
			fields[i] = jen.Id(fd.GoName).Add(goType(&fd.Type)).Tag(map[string]string{"json": fd.Name})
		}
		f.Type().Id(t.GoName).Struct(fields...)
		emitDurationJSON(f, t, s.Durations)
	}
}

// emitDurationJSON gives a declared type with duration fields JSON methods
// that store those fields as Go duration strings ("1m30s") instead of
// encoding/json's integer nanoseconds, and read either. The fields stay
// time.Duration: the methods shadow them, in an anonymous struct that embeds
// the type's fields, with pointers converted to runtime.JSONDuration (or
// JSONDurations for []duration), so every other field is encoded as before.
//
// With durations: nanoseconds only UnmarshalJSON is emitted: the type writes
// integer nanoseconds, which zkgen's earlier generated code reads, and reads
// both (the first step of an upgrade; see docs/spec.md).
func emitDurationJSON(f *jen.File, t *spec.Type, format spec.DurationFormat) {
	var shadows []jen.Code
	var ptrs []jen.Code
	for _, fd := range t.Fields {
		if fd.Type.Decl != nil || fd.Type.Name != "duration" {
			continue
		}
		wrapper := "JSONDuration"
		if fd.Type.Slice {
			wrapper = "JSONDurations"
		}
		shadows = append(shadows, jen.Id(fd.GoName).Op("*").Qual(runtimePkg, wrapper).Tag(map[string]string{"json": fd.Name}))
		ptrs = append(ptrs, jen.Parens(jen.Op("*").Qual(runtimePkg, wrapper)).Parens(jen.Op("&").Id("v").Dot(fd.GoName)))
	}
	if len(shadows) == 0 {
		return
	}
	aux := func(self jen.Code) *jen.Statement {
		return jen.Op("&").Struct(append([]jen.Code{jen.Op("*").Id("fields")}, shadows...)...).
			Values(append([]jen.Code{jen.Parens(jen.Op("*").Id("fields")).Parens(self)}, ptrs...)...)
	}
	if format == spec.DurationsString {
		f.Comment(fmt.Sprintf("MarshalJSON stores %s as JSON, its durations as Go duration strings (\"1m30s\").", t.GoName))
		f.Func().Params(jen.Id("v").Id(t.GoName)).Id("MarshalJSON").Params().Params(jen.Index().Byte(), jen.Error()).Block(
			jen.Type().Id("fields").Id(t.GoName),
			jen.Return(jen.Qual("encoding/json", "Marshal").Call(aux(jen.Op("&").Id("v")))),
		)
	}
	f.Comment(fmt.Sprintf("UnmarshalJSON reads %s from JSON; a duration may be a Go duration string or, as", t.GoName))
	f.Comment("zkgen stored durations before, integer nanoseconds.")
	f.Func().Params(jen.Id("v").Op("*").Id(t.GoName)).Id("UnmarshalJSON").Params(jen.Id("data").Index().Byte()).Error().Block(
		jen.Type().Id("fields").Id(t.GoName),
		jen.Return(jen.Qual("encoding/json", "Unmarshal").Call(jen.Id("data"), aux(jen.Id("v")))),
	)
}

// goType returns the Go type of a type reference. A nil reference (a
// payload the spec leaves out) is raw bytes.
func goType(r *spec.TypeRef) *jen.Statement {
	if r == nil {
		return jen.Index().Byte()
	}
	var el *jen.Statement
	switch {
	case r.Decl != nil && r.Decl.GoType != "":
		i := strings.LastIndexByte(r.Decl.GoType, '.')
		el = jen.Qual(r.Decl.GoType[:i], r.Decl.GoType[i+1:])
	case r.Decl != nil:
		el = jen.Id(r.Decl.GoName)
	default:
		switch r.Name {
		case "bytes":
			el = jen.Index().Byte()
		case "string":
			el = jen.String()
		case "int":
			el = jen.Int()
		case "bool":
			el = jen.Bool()
		case "float":
			el = jen.Float64()
		case "duration":
			el = jen.Qual("time", "Duration")
		case "time":
			el = jen.Qual("time", "Time")
		default:
			panic("templates: unknown builtin type " + r.Name) // spec validated it
		}
	}
	if r.Slice {
		return jen.Index().Add(el)
	}
	return el
}

// codecExpr returns the runtime codec of a payload type reference: raw
// bytes for bytes (and an absent payload), raw UTF-8 for string, JSON for
// everything else.
func codecExpr(r *spec.TypeRef) *jen.Statement {
	switch {
	case r == nil || (r.Decl == nil && !r.Slice && r.Name == "bytes"):
		return jen.Qual(runtimePkg, "BytesCodec").Call()
	case r.Decl == nil && !r.Slice && r.Name == "string":
		return jen.Qual(runtimePkg, "StringCodec").Call()
	default:
		return jen.Qual(runtimePkg, "JSONCodec").Types(goType(r)).Call()
	}
}
