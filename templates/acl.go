package templates

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/zkgen/zkgen/internal/bind"
	"github.com/zkgen/zkgen/spec"
)

// newHandle renders runtime.<ctor>(args..., <the resource's ACL option>,
// runtime.WithResourceName(<name>)): the resource's effective ACL (its
// own, else the top-level one; spec resolves that) applied to every node
// the handle creates, and its spec name for the handle's telemetry.
func newHandle(r *spec.Resource, ctor string, args ...jen.Code) jen.Code {
	if r.ACL != nil {
		args = append(args, jen.Qual(runtimePkg, "WithNodeACL").Call(aclExpr(r.ACL)))
	}
	args = append(args, jen.Qual(runtimePkg, "WithResourceName").Call(jen.Lit(r.Name)))
	return jen.Qual(runtimePkg, ctor).Call(args...)
}

// aclExpr renders a declared ACL as the runtime helper building it. The
// same helpers back bind.ZKACL (zkgen provision), so generated
// handles and provisioned parents get the same ACLs.
func aclExpr(a *spec.ACL) jen.Code {
	if a.Policy != "" {
		return jen.Qual(runtimePkg, bind.ACLPolicies[a.Policy].Name).Call()
	}
	users := make([]jen.Code, len(a.Digest))
	for i, d := range a.Digest {
		users[i] = jen.Line().Qual(runtimePkg, "DigestUser").Values(
			jen.Id("ID").Op(":").Lit(d.ID), jen.Id("Perms").Op(":").Lit(d.Perms))
	}
	return jen.Qual(runtimePkg, "DigestACL").Call(append(users, jen.Line())...)
}

// aclDoc documents the ACL of the nodes a handle creates.
func aclDoc(f *jen.File, r *spec.Resource) {
	if r.ACL == nil {
		return
	}
	f.Comment("")
	switch r.ACL.Policy {
	case spec.ACLWorldAll:
		f.Comment("Nodes it creates are open to everyone (acl: world_all).")
	case spec.ACLWorldRead:
		f.Comment("Nodes it creates are readable by everyone and writable only by the authenticated")
		f.Comment("identity that created them (acl: world_read); the session needs runtime.WithAuth to create them.")
	case spec.ACLCreatorAll:
		f.Comment("Nodes it creates are accessible only to the authenticated identity that created")
		f.Comment("them (acl: creator_all); the session needs runtime.WithAuth.")
	default:
		users := make([]string, len(r.ACL.Digest))
		for i, d := range r.ACL.Digest {
			user, _, _ := strings.Cut(d.ID, ":")
			users[i] = fmt.Sprintf("%s (%s)", user, d.Perms)
		}
		f.Comment(fmt.Sprintf("Nodes it creates are accessible only to the digest users %s;", strings.Join(users, ", ")))
		f.Comment(`the session authenticates with runtime.WithAuth("digest", []byte("user:password")).`)
	}
}
