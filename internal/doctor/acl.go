package doctor

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/internal/inspect"
	"github.com/zkgen/zkgen/spec"
)

// aclProbe is one directory the resources' nodes go in, with one
// declared ACL, and the resources whose nodes go there so.
type aclProbe struct {
	dir   string // the directory, or its deepest existing ancestor
	acl   *spec.ACL
	names []string
}

// nodesDir is the directory r's nodes go in: the parent of its path's
// first parameter, or of its last segment.
func nodesDir(r *spec.Resource) string {
	p := "/" + inspect.LiteralPrefix(r)
	if len(r.Params) == 0 {
		p = path.Dir(p)
	}
	return p
}

// aclProbes groups the resources by the existing directory their nodes go
// in (the deepest existing ancestor of nodesDir) and their declared ACL, in
// spec order.
func (p *prober) aclProbes(ctx context.Context) ([]*aclProbe, error) {
	var out []*aclProbe
	for _, r := range p.o.Spec.Resources {
		dir, err := p.existing(ctx, nodesDir(r))
		if err != nil {
			return nil, err
		}
		i := slices.IndexFunc(out, func(g *aclProbe) bool { return g.dir == dir && g.acl == r.ACL })
		if i < 0 {
			out = append(out, &aclProbe{dir: dir, acl: r.ACL})
			i = len(out) - 1
		}
		out[i].names = append(out[i].names, r.Name)
	}
	return out, nil
}

// acls checks, for every directory the resources' nodes go in and the ACL
// they declare, that this session may do there what the recipes do: one
// line if it may everywhere, else one per group where it may not.
func (p *prober) acls(ctx context.Context) []Line {
	groups, err := p.aclProbes(ctx)
	if err != nil {
		return []Line{{Unknown, CheckACL, err.Error()}}
	}
	var fails []Line
	for _, g := range groups {
		if err := p.tryDir(ctx, g.dir, aclOf(g.acl)); err != nil {
			fails = append(fails, aclFailure(g, err))
		}
	}
	switch {
	case len(fails) > 0:
		return fails
	case len(groups) == 0:
		return []Line{{Skipped, CheckACL, "no resource declared"}}
	}
	dirs := "1 directory"
	if len(groups) > 1 {
		dirs = fmt.Sprintf("%d directories", len(groups))
	}
	return []Line{{OK, CheckACL, fmt.Sprintf("created, read, wrote and deleted nodes with the declared ACLs in %s the resources' nodes go in, as this session (%s)", dirs, p.identity())}}
}

// identity says who the session is, for the lines.
func (p *prober) identity() string {
	id := "anonymous"
	if p.o.Auth {
		id = "with --auth"
	}
	if p.o.TLS != nil && len(p.o.TLS.Certificates) > 0 {
		id += ", with a client certificate"
	}
	return id
}

// aclFailure is the line of a group whose probe failed: why, and what to
// change.
func aclFailure(g *aclProbe, err error) Line {
	who := fmt.Sprintf("%s (%s, in %s)", strings.Join(g.names, ", "), aclName(g.acl), g.dir)
	var pe *probeError
	if !errors.As(err, &pe) {
		return Line{Unknown, CheckACL, fmt.Sprintf("%s: %v", who, err)}
	}
	switch {
	case errors.Is(err, errNoCredentials), errors.Is(err, zk.ErrInvalidACL):
		return Line{Fail, CheckACL, fmt.Sprintf("%s: %v: that ACL grants the identity that creates a node, so their processes need credentials: --auth user:password here, runtime.WithAuth in the services", who, pe)}
	case errors.Is(err, zk.ErrNoAuth) && (pe.step == stepCreate || pe.step == stepDelete):
		return Line{Fail, CheckACL, fmt.Sprintf("%s: %v: the ACL of %s does not let this identity create and delete nodes there: use credentials it grants (--auth here, runtime.WithAuth in the services), or change it (setAcl %s)", who, pe, g.dir, g.dir)}
	case errors.Is(err, zk.ErrNoAuth):
		return Line{Fail, CheckACL, fmt.Sprintf("%s: %v: the declared acl does not grant this identity what the recipes do in their nodes (read, write, create, delete): use the credentials of a user it grants rwcd (--auth here, runtime.WithAuth in the services)", who, pe)}
	}
	return Line{Unknown, CheckACL, fmt.Sprintf("%s: %v", who, pe)}
}
