package templates

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/internal/bind"
	"github.com/zkgen/zkgen/spec"
)

// cacheDesc is what the generator knows of a kind's cache: the Client
// method <GoName>Cache returns a runtime cache of the resource's
// instances, keyed by their path parameters, running on the Client's
// session.
type cacheDesc struct {
	// ctor is the runtime constructor (NewCache, NewLockCache, ...), called
	// with the template, the key function and args(r).
	ctor string
	// name is the runtime type the doc comment links to (Cache,
	// LockCache, ...): its doc states the contract.
	name string
	// typ is the cache's runtime type for key type key.
	typ func(r *spec.Resource, key jen.Code) jen.Code
	// args are the constructor's arguments after the key function.
	args func(r *spec.Resource) []jen.Code
	// mirrors is the doc comment's account of what each instance shows.
	mirrors func(r *spec.Resource) string
}

// valueCache is the cache of a kind whose instances are nodes holding a
// payload of type ref(r): each instance's decoded value.
func valueCache(ref func(r *spec.Resource) *spec.TypeRef, mirrors string) *cacheDesc {
	return &cacheDesc{
		ctor: "NewCache",
		name: "Cache",
		typ: func(r *spec.Resource, key jen.Code) jen.Code {
			return jen.Op("*").Qual(runtimePkg, "Cache").Types(key, goType(ref(r)))
		},
		args:    func(r *spec.Resource) []jen.Code { return []jen.Code{codecExpr(ref(r))} },
		mirrors: func(*spec.Resource) string { return mirrors },
	}
}

// lockCache is the cache of a lock kind: each instance's holders and
// waiters (runtime.LockState), derived from its contender nodes.
func lockCache(ctor, mirrors string) *cacheDesc {
	return &cacheDesc{
		ctor: ctor,
		name: "LockCache",
		typ: func(_ *spec.Resource, key jen.Code) jen.Code {
			return jen.Op("*").Qual(runtimePkg, "LockCache").Types(key)
		},
		args:    func(r *spec.Resource) []jen.Code { return []jen.Code{layoutArg(r)} },
		mirrors: func(*spec.Resource) string { return mirrors },
	}
}

// layoutArg names the runtime layout of r (runtime.LayoutCurator unless
// the spec says otherwise).
func layoutArg(r *spec.Resource) jen.Code {
	return jen.Qual(runtimePkg, bind.Layouts[cmp.Or(r.Layout, spec.LayoutCurator)].Name)
}

// emitCache emits r's key type (for two parameters or more) and its
// Client method <GoName>Cache.
func emitCache(f *jen.File, r *spec.Resource, d *cacheDesc) {
	key, keyFn := cacheKey(f, r)
	name := r.GoName + "Cache"
	f.Comment(fmt.Sprintf("%s returns a cache of %s at %s: %s, keyed by %s, read from memory.",
		name, r.Name, layout(r), d.mirrors(r), keyDoc(r)))
	f.Comment(fmt.Sprintf("It is [runtime.%s]'s cache with opts, run on c's session by a goroutine of its", d.ctor))
	f.Comment("own, which drops the error [runtime.Cache.Run] returns when ctx or the session ends")
	f.Comment("(or the cache stops); under Run, make a new cache in fn. Each call sets a watch and loads")
	f.Comment(fmt.Sprintf("every instance: make one per resource and keep it. See [runtime.%s] and docs/caches.md.", d.name))
	ctx := jen.Qual("context", "Context")
	args := append([]jen.Code{templateExpr(r), keyFn}, d.args(r)...)
	f.Func().Params(jen.Id("c").Op("*").Id("Client")).Id(name).Params(
		jen.Id("ctx").Add(ctx), jen.Id("opts").Op("...").Qual(runtimePkg, "CacheOption"),
	).Params(d.typ(r, key), jen.Error()).Block(
		jen.List(jen.Id("cache"), jen.Err()).Op(":=").Qual(runtimePkg, d.ctor).Call(append(args, jen.Id("opts").Op("..."))...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Go().Func().Params().Block(jen.Id("_").Op("=").Id("cache").Dot("Run").Call(jen.Id("ctx"), jen.Id("c").Dot("sess"))).Call(),
		jen.Return(jen.Id("cache"), jen.Nil()),
	)
}

// cacheKey returns the key type of r's cache and the function making it
// from the path parameters: struct{} without parameters, the parameter's
// type for one, else the struct <GoName>Key, which it emits.
func cacheKey(f *jen.File, r *spec.Resource) (key jen.Code, fn jen.Code) {
	get := func(i int, p *spec.Param) jen.Code {
		if p.Type == "int" {
			return jen.Id("p").Dot("Int").Call(jen.Lit(i))
		}
		return jen.Id("p").Dot("Str").Call(jen.Lit(i))
	}
	var t, v jen.Code
	switch len(r.Params) {
	case 0:
		t, v = jen.Struct(), jen.Struct().Values()
	case 1:
		t, v = jen.Id(r.Params[0].Type), get(0, r.Params[0])
	default:
		fields, vals := make([]jen.Code, len(r.Params)), make([]jen.Code, len(r.Params))
		for i, p := range r.Params {
			fields[i] = jen.Id(exported(p.GoName)).Id(p.Type)
			vals[i] = jen.Line().Id(exported(p.GoName)).Op(":").Add(get(i, p))
		}
		vals = append(vals, jen.Line())
		f.Comment(fmt.Sprintf("%sKey is the key of an instance of %s in %sCache: its path parameters.", r.GoName, r.Name, r.GoName))
		f.Type().Id(r.GoName + "Key").Struct(fields...)
		t, v = jen.Id(r.GoName+"Key"), jen.Id(r.GoName+"Key").Values(vals...)
	}
	return t, jen.Func().Params(jen.Id("p").Qual(runtimePkg, "Params")).Add(t).Block(jen.Return(v))
}

// keyDoc says what keys r's cache, for its doc comment.
func keyDoc(r *spec.Resource) string {
	switch len(r.Params) {
	case 0:
		return "struct{}{} (one instance)"
	case 1:
		return r.Params[0].GoName
	}
	return r.GoName + "Key"
}

// exported returns a lowerCamelCase Go name with its first letter upper.
func exported(name string) string { return strings.ToUpper(name[:1]) + name[1:] }

// templateExpr builds the runtime.Template of r's instances: pathExpr's
// shape, without values.
func templateExpr(r *spec.Resource) *jen.Statement { return segmentsExpr(r, "TemplateAt", false) }
