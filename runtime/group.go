package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-zookeeper/zk"
)

// Group is group membership on a znode directory (the ZooKeeper guide's "out
// of the box" application): each member is an ephemeral sequential node
// <dir>/_c_<uuid>-member-<seq> carrying the encoded member, so a member
// whose session ends leaves the group by itself. Members are listed in the
// order they joined.
//
// Members of other libraries count too, as those libraries count them:
// every child of the directory, as Curator's GroupMember names its members
// by their ids; with WithLayout(LayoutKazoo), our member nodes are named
// <hex>__party__<seq> and only children whose names hold "__party__" count,
// as kazoo's Party has it. A member node of ours that cannot be decoded is an
// error (ErrDecode); another library's member whose payload the codec cannot
// decode is left out (and logged): share a group with member: string (or
// bytes) to see every payload.
//
// A Group handle stands for one member: Join on a handle that is a member
// returns ErrAlreadyHeld; after Leave it can join again. Two handles, even on
// one session, are two members. Methods are safe for concurrent use.
type Group[T any] struct {
	s     *Session
	dir   string
	err   error
	codec Codec[T]
	acl   []zk.ACL // of created nodes; empty: the session's default
	fam   *family  // our member node names: groupMembers or kazooParty
	name  string   // WithResourceName

	busy slot // joining or a member
}

// Membership is one member's presence in a group, held until Leave or
// until it is lost: its session expired or was closed, or its member node
// was deleted by someone else. Node is the member node; Lost and Context
// report the end of the membership, and context.Cause wraps
// ErrMembershipLost on loss, ErrNotHeld after Leave.
type Membership[T any] struct {
	tenure
	g      *Group[T]
	member T
}

// NewGroup returns a member handle for the group at directory p, with
// members encoded by codec. It does no I/O; the directory and its parents are
// created (as container nodes) on first Join. If p is invalid, every method
// returns p's error. opts: WithNodeACL, WithLayout (LayoutKazoo: kazoo
// Party's names).
func NewGroup[T any](s *Session, p Path, codec Codec[T], opts ...HandleOption) *Group[T] {
	cfg := handleOptions(opts)
	fam := groupMembers
	if cfg.layout == LayoutKazoo {
		fam = kazooParty
	}
	return &Group[T]{s: s, dir: p.String(), err: p.Err(), codec: codec, acl: cfg.acl, fam: fam, name: cfg.name}
}

// Path returns the group's directory.
func (g *Group[T]) Path() string { return g.dir }

// Join adds this member to the group: it creates the member's ephemeral node
// and returns once it exists. It blocks only for the create; if ctx ends
// first it returns ctx's error and removes the node if the create went
// through after all. The node stays until Leave or the end of the session.
func (g *Group[T]) Join(ctx context.Context, member T) (_ *Membership[T], err error) {
	defer g.s.tel.begin(ctx, opGroupJoin, "group", g.name, g.dir).end(&err)
	if g.err != nil {
		return nil, g.err
	}
	data, err := g.codec.Encode(member)
	if err != nil {
		return nil, fmt.Errorf("group %s: encoding member: %w", g.dir, err)
	}
	if !g.busy.take() {
		return nil, fmt.Errorf("group %s: %w", g.dir, ErrAlreadyHeld)
	}
	m, err := g.join(ctx, member, data)
	if err != nil {
		g.busy.free()
	}
	return m, err
}

func (g *Group[T]) join(ctx context.Context, member T, data []byte) (*Membership[T], error) {
	node, err := g.s.createProtected(ctx, g.acl, g.dir, g.fam.prefix(0), data)
	if err != nil {
		return nil, err
	}
	h, err := g.s.startHoldAs(ctx, node, 0, false, ErrMembershipLost)
	if err != nil {
		return nil, g.s.abandon(node, err)
	}
	g.s.tel.tenureOf(h, "group", g.name, g.dir)
	return &Membership[T]{tenure: tenure{s: g.s, h: h}, g: g, member: member}, nil
}

// Member returns the member this membership was joined with.
func (m *Membership[T]) Member() T { return m.member }

// Leave removes the member node. It returns ErrMembershipLost if the
// membership had been lost (the node is gone already) and ErrNotMember on a
// second call. If ctx ends before the delete is confirmed, the delete
// carries on in the background (bounded) and Leave returns ctx's error.
// Either way the Group handle can join again.
func (m *Membership[T]) Leave(ctx context.Context) (err error) {
	defer m.g.s.tel.begin(ctx, opGroupLeave, "group", m.g.name, m.g.dir).end(&err)
	if !m.giveUp() {
		return fmt.Errorf("group %s: %w", m.g.dir, ErrNotMember)
	}
	defer m.g.busy.free()
	err = m.g.s.release(ctx, m.h)
	if errors.Is(err, ErrMembershipLost) {
		return fmt.Errorf("group %s: %w", m.h.node, ErrMembershipLost)
	}
	return err
}

// Members returns the current members in the order they joined. It does not
// block beyond the reads; a missing group directory is an empty group.
func (g *Group[T]) Members(ctx context.Context) ([]T, error) {
	if g.err != nil {
		return nil, g.err
	}
	kids, err := g.s.children(ctx, g.dir)
	if isNoNode(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ms, _, _, err := g.readMembers(ctx, kids, nil)
	if err != nil {
		return nil, err
	}
	out := make([]T, len(ms))
	for i, m := range ms {
		out[i] = m.v
	}
	return out, nil
}

// groupEntry is one member read from the directory.
type groupEntry[T any] struct {
	name string
	zxid int64 // creation: members are listed in this order
	v    T
}

// readMembers reads the members among kids, in the order they joined;
// cache, if not nil, holds members read before (by name) and is updated.
// A member of ours that cannot be decoded is an error when strict (cache
// nil), else left out and returned in bad (its name, marked, is in names:
// a list with a new undecodable member is a new state); another library's
// is always left out (and logged). It also returns the member names.
func (g *Group[T]) readMembers(ctx context.Context, kids []string, cache map[string]groupEntry[T]) (out []groupEntry[T], names []string, bad []error, err error) {
	strict := cache == nil
	var badNames []string
	for _, name := range kids {
		_, ours := parseSeq(name, g.fam.markers[0])
		if !ours && g.fam == kazooParty && !strings.Contains(name, kazooPartyMarker) {
			continue // kazoo's Party counts only its own names
		}
		if e, ok := cache[name]; ok {
			out = append(out, e)
			continue
		}
		p := joinPath(g.dir, name)
		data, st, err := g.s.get(ctx, p)
		if isNoNode(err) {
			continue // left meanwhile
		}
		if err != nil {
			return nil, nil, nil, err
		}
		v, err := g.codec.Decode(data)
		if err != nil && ours && strict {
			return nil, nil, nil, fmt.Errorf("group %s: member %s: %w", g.dir, name, err)
		}
		if err != nil {
			g.s.log.Warn("group: undecodable member", "path", p, "err", err)
			if ours {
				bad = append(bad, fmt.Errorf("group member %s: %w", p, err))
				badNames = append(badNames, "!"+name)
			}
			continue
		}
		e := groupEntry[T]{name: name, zxid: st.Czxid, v: v}
		if cache != nil {
			cache[name] = e
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b groupEntry[T]) int { return cmp.Compare(a.zxid, b.zxid) })
	names = make([]string, 0, len(out)+len(badNames))
	for _, e := range out {
		names = append(names, e.name)
	}
	return out, append(names, badNames...), bad, nil
}

// Watch streams the member list: the current list first, then the full list
// after every change (a join or a leave, including a member whose session
// ended). Each read re-arms a child watch in the same request, so no change
// is missed; a consumer slower than the changes receives the newest list
// (intermediate lists may be skipped), and the final list is always
// delivered. Member data is read once per member node. A member whose data
// cannot be decoded is left out of Members and named in Err (wrapping
// ErrDecode); the stream goes on. The channel is closed when ctx or the
// session ends; when the session ends, the last list is delivered once more
// with Err set to why (ErrSessionExpired or ErrClosed) before it closes. A
// handle that cannot work (a bad path) gives one MemberList with Err set,
// then the close. While the group directory does not exist an exists
// watch waits for it, and may stay registered on the server after ctx ends
// until the directory is created.
func (g *Group[T]) Watch(ctx context.Context) <-chan MemberList[T] {
	if g.err != nil {
		return failedStream(ctx, MemberList[T]{Members: []T{}, Err: g.err})
	}
	cache := map[string]groupEntry[T]{} // member node name -> member; used by the stream goroutine only
	return stream(ctx, g.s, "group "+g.dir, func(ctx context.Context) (snapshot[MemberList[T]], error) {
		return g.readList(ctx, cache)
	}, func(last MemberList[T], err error) MemberList[T] {
		if last.Members == nil {
			last.Members = []T{}
		}
		last.Err = err
		return last
	})
}

// readList reads the member list for Watch and leaves a child watch (an
// exists watch while the directory is missing). cache holds the members
// decoded before, by node name; readList keeps it to the live members.
func (g *Group[T]) readList(ctx context.Context, cache map[string]groupEntry[T]) (snapshot[MemberList[T]], error) {
	var r getResult
	for {
		var err error
		r, err = g.s.childrenW(ctx, g.dir)
		if err == nil {
			break
		}
		if !isNoNode(err) {
			return snapshot[MemberList[T]]{}, err
		}
		ok, _, w, err := g.s.existsW(ctx, g.dir)
		if err != nil {
			return snapshot[MemberList[T]]{}, err
		}
		if !ok {
			clear(cache)
			return snapshot[MemberList[T]]{v: MemberList[T]{Members: []T{}}, key: "", watch: w}, nil
		}
		// Created between the two reads: list it.
	}
	ms, names, bad, err := g.readMembers(ctx, r.kids, cache)
	if err != nil {
		return snapshot[MemberList[T]]{}, err
	}
	list := make([]T, len(ms))
	for i, m := range ms {
		list[i] = m.v
	}
	live := make(map[string]bool, len(r.kids))
	for _, k := range r.kids {
		live[k] = true
	}
	for k := range cache {
		if !live[k] {
			delete(cache, k)
		}
	}
	return snapshot[MemberList[T]]{v: MemberList[T]{Members: list, Err: errors.Join(bad...)}, key: strings.Join(names, "/"), watch: r.watch}, nil
}

// MemberList is one state of a group that Group.Watch delivers.
type MemberList[T any] struct {
	// Members are the members in join order (never nil).
	Members []T
	// Err is nil for a plain list. It wraps ErrDecode when a member's data
	// could not be decoded (that member is left out of Members; the stream
	// goes on), and is ErrSessionExpired or ErrClosed on the last list
	// before the channel closes because the session ended.
	Err error
}

// Group members: _c_<uuid>-member-<seq> (nobody waits on anybody).
var groupMembers = &family{markers: []string{"member-"}, blockedBy: [][]bool{{false}}}

// kazooPartyMarker is in the name of every member node of kazoo's Party.
const kazooPartyMarker = "__party__"

// Group members in kazoo Party's names: <hex>__party__<seq> (kazoo's own
// are <hex>__party__, without a sequence).
var kazooParty = &family{markers: []string{kazooPartyMarker}, blockedBy: [][]bool{{false}}, kazoo: true}
