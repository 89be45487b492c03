package breaking

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/zkgen/zkgen/spec"
)

// allPerms is every ZooKeeper permission, in the spec's order.
const allPerms = "rwcda"

// grants is what an ACL grants, by identity.
type grants struct {
	world   string            // permissions of everyone (world:anyone)
	creator string            // permissions of the authenticated creator (auth)
	digest  map[string]string // permissions by digest id ("user:hash")
}

// grantsOf is what a declared ACL grants. No ACL is the open ACL.
func grantsOf(a *spec.ACL) grants {
	switch {
	case a == nil || a.Policy == spec.ACLWorldAll:
		return grants{world: allPerms}
	case a.Policy == spec.ACLWorldRead:
		return grants{world: "r", creator: allPerms}
	case a.Policy == spec.ACLCreatorAll:
		return grants{creator: allPerms}
	}
	g := grants{digest: map[string]string{}}
	for _, u := range a.Digest {
		g.digest[u.ID] = u.Perms
	}
	return g
}

// lost lists what o grants and n does not, one "who perms" each. A
// permission everyone has covers every identity. The authenticated creator
// and a digest user are never taken for each other: zkgen cannot know who
// the creator is.
func lost(o, n grants) []string {
	var out []string
	missing := func(who, had, has string) {
		var m []byte
		for _, p := range []byte(had) {
			if !strings.ContainsRune(has, rune(p)) && !strings.ContainsRune(n.world, rune(p)) {
				m = append(m, p)
			}
		}
		if len(m) > 0 {
			out = append(out, who+" "+string(m))
		}
	}
	missing("everyone", o.world, n.world)
	missing("the authenticated creator", o.creator, n.creator)
	for _, id := range slices.Sorted(maps.Keys(o.digest)) {
		missing("digest "+id, o.digest[id], n.digest[id])
	}
	return out
}

// aclText describes an ACL as the spec writes it.
func aclText(a *spec.ACL) string {
	switch {
	case a == nil:
		return "no acl (everyone, every permission)"
	case a.Policy != "":
		return string(a.Policy)
	}
	us := make([]string, len(a.Digest))
	for i, u := range a.Digest {
		us[i] = u.ID + " " + u.Perms
	}
	return "[" + strings.Join(us, ", ") + "]"
}

// checkACL reports an ACL (the resource's own, else the top-level one) that
// no longer grants an identity a permission it had: old processes would be
// refused on the nodes new processes create.
func checkACL(c *comparison, o, n *spec.Resource) {
	gone := lost(grantsOf(o.ACL), grantsOf(n.ACL))
	if len(gone) == 0 {
		return
	}
	oldText := aclText(o.ACL)
	if o.ACL != nil {
		oldText += fmt.Sprintf(" (old line %d)", o.ACL.Pos.Line)
	}
	newText := aclText(n.ACL)
	if n.ACL == c.new.Spec.ACL {
		newText += " (the top-level acl)"
	}
	c.add(Finding{Pos: n.ACL.Pos, Field: field(n, "acl"), Severity: Breaking,
		Msg: fmt.Sprintf("acl narrowed from %s to %s: it no longer grants %s, so old processes may be refused on the nodes new ones create",
			oldText, newText, strings.Join(gone, ", ")),
		Old: aclText(o.ACL), New: aclText(n.ACL)})
}
