package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Sentinel errors of the group membership, tested with errors.Is.
var (
	// ErrMembershipLost means a group membership ended without Leave: the
	// member node was deleted by someone else or the session ended.
	ErrMembershipLost = client.EndError("group: membership lost")
	// ErrNotMember means Leave was called on a membership already left.
	ErrNotMember = errors.New("group: not a member")
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

// Guarded runs ops as one ZooKeeper multi that also checks that this
// membership's node still exists: the writes happen only while it is a
// member. Errors as for Lock.Guarded (ErrMembershipLost on loss, ErrNotHeld
// after Leave, ErrOutcomeUnknown when the reply was lost).
func (m *Membership[T]) Guarded(ctx context.Context, ops ...any) ([]zk.MultiResponse, error) {
	return m.guardedOwn(ctx, "group", ops)
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
	defer telOf(g.s).begin(ctx, opGroupJoin, "group", g.name, g.dir).end(&err)
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
	node, err := opsOf(g.s).CreateProtected(ctx, g.acl, g.dir, g.fam.prefix(opsOf(g.s).Rand(), 0), data)
	if err != nil {
		return nil, err
	}
	h, err := startHoldAs(ctx, g.s, node, 0, false, ErrMembershipLost)
	if err != nil {
		return nil, abandonNode(g.s, node, err)
	}
	telOf(g.s).tenureOf(h, "group", g.name, g.dir)
	return &Membership[T]{tenure: tenure{s: g.s, h: h}, g: g, member: member}, nil
}

// Member returns the member this membership was joined with.
func (m *Membership[T]) Member() T { return m.member }

// Leave removes the member node. It returns ErrMembershipLost if the
// membership had been lost (the node is gone already) and ErrNotMember on a
// second call. If the delete is not confirmed — ctx ended, or it failed
// while the session lives — it carries on in the background (bounded) and
// Leave returns the error.
// Either way the Group handle can join again.
func (m *Membership[T]) Leave(ctx context.Context) (err error) {
	if m.zero() {
		return errZeroValue
	}
	defer telOf(m.g.s).begin(ctx, opGroupLeave, "group", m.g.name, m.g.dir).end(&err)
	if !m.giveUp() {
		return fmt.Errorf("group %s: %w", m.g.dir, ErrNotMember)
	}
	defer m.g.busy.free()
	err = releaseHold(ctx, m.g.s, m.h)
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
	kids, err := opsOf(g.s).Children(ctx, g.dir)
	if client.IsNoNode(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ms, _, _, err := g.readMembers(ctx, kids, true)
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
	seen uint64 // the last read of a Watch stream that listed it
}

// readMembers reads the members among kids, in the order they joined.
// A member of ours that cannot be decoded is an error when strict, else
// left out and returned in bad, its name marked in badNames (a list with a
// new undecodable member is a new state); another library's is always left
// out (and logged).
func (g *Group[T]) readMembers(ctx context.Context, kids []string, strict bool) (out []*groupEntry[T], badNames []string, bad []error, err error) {
	for _, name := range kids {
		_, ours := parseSeq(name, g.fam.markers[0])
		if !ours && g.fam == kazooParty && !strings.Contains(name, kazooPartyMarker) {
			continue // kazoo's Party counts only its own names
		}
		p := joinPath(g.dir, name)
		data, st, err := opsOf(g.s).Get(ctx, p)
		if client.IsNoNode(err) {
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
			opsOf(g.s).Log().Warn("group: undecodable member", "path", p, "err", err)
			if ours {
				bad = append(bad, fmt.Errorf("group member %s: %w", p, err))
				badNames = append(badNames, "!"+name)
			}
			continue
		}
		out = append(out, &groupEntry[T]{name: name, zxid: st.Czxid, v: v})
	}
	slices.SortFunc(out, func(a, b *groupEntry[T]) int { return cmp.Compare(a.zxid, b.zxid) })
	return out, badNames, bad, nil
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
	cache := &groupCache[T]{byName: map[string]*groupEntry[T]{}} // used by the stream goroutine only
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

// groupCache is what a Watch stream knows of the members between reads.
type groupCache[T any] struct {
	byName map[string]*groupEntry[T] // the members decoded, by node name
	sorted []*groupEntry[T]          // the same, in the order they joined
	reads  uint64                    // the reads so far, to mark the members each saw
}

// readList reads the member list for Watch and leaves a child watch (an
// exists watch while the directory is missing). Only the members not in
// cache are read; the list is the cached members still present, in their
// order, merged with the new ones, so a change costs its own reads and one
// pass over the names rather than a sort of the whole group. readList keeps
// cache to the live members.
func (g *Group[T]) readList(ctx context.Context, cache *groupCache[T]) (snapshot[MemberList[T]], error) {
	r, exists, err := opsOf(g.s).ChildrenOrExistsW(ctx, g.dir)
	switch {
	case err != nil:
		return snapshot[MemberList[T]]{}, err
	case !exists:
		clear(cache.byName)
		cache.sorted = nil
		return snapshot[MemberList[T]]{v: MemberList[T]{Members: []T{}}, key: "", watch: r.Watch}, nil
	}
	cache.reads++
	var fresh []string
	for _, k := range r.Kids {
		if e, ok := cache.byName[k]; ok {
			e.seen = cache.reads
		} else {
			fresh = append(fresh, k)
		}
	}
	added, badNames, bad, err := g.readMembers(ctx, fresh, false)
	if err != nil {
		return snapshot[MemberList[T]]{}, err
	}
	kept := make([]*groupEntry[T], 0, len(cache.sorted)+len(added))
	for _, e := range cache.sorted {
		if e.seen == cache.reads {
			kept = append(kept, e)
		} else {
			delete(cache.byName, e.name) // left
		}
	}
	for _, e := range added {
		e.seen = cache.reads
		cache.byName[e.name] = e
	}
	ms := mergeJoined(kept, added)
	cache.sorted = ms
	list := make([]T, len(ms))
	names := make([]string, 0, len(ms)+len(badNames))
	for i, m := range ms {
		list[i] = m.v
		names = append(names, m.name)
	}
	names = append(names, badNames...)
	return snapshot[MemberList[T]]{v: MemberList[T]{Members: list, Err: client.JoinErrors(bad...)}, key: strings.Join(names, "/"), watch: r.Watch}, nil
}

// mergeJoined merges a and b, each in join order, into one list in join
// order. a has room for b appended: the common case, members newer than all
// of a, costs no copy.
func mergeJoined[T any](a, b []*groupEntry[T]) []*groupEntry[T] {
	if len(b) == 0 || len(a) == 0 || a[len(a)-1].zxid < b[0].zxid {
		return append(a, b...)
	}
	out := make([]*groupEntry[T], 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		if b[j].zxid < a[i].zxid {
			out = append(out, b[j])
			j++
		} else {
			out = append(out, a[i])
			i++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
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

// Stay joins the group as member and stays a member until ctx ends (then
// it leaves and returns nil). If the member node is deleted while the
// session lives (reaped by an operator), it joins again after a short
// random pause. It returns the session's end when the session ends, so
// that under Supervise it joins again on the next session.
func (g *Group[T]) Stay(ctx context.Context, member T) error {
	return stay(ctx, g.s, "group", func(ctx context.Context) (stayer, error) {
		m, err := g.Join(ctx, member)
		if err != nil {
			return nil, err
		}
		return groupStayer[T]{m}, nil
	})
}

type groupStayer[T any] struct{ *Membership[T] }

func (m groupStayer[T]) ended() <-chan struct{}          { return m.Lost() }
func (m groupStayer[T]) leave(ctx context.Context) error { return m.Leave(ctx) }

// stayer is a membership held by stay: a group's or a partitioner's.
type stayer interface {
	Node() string
	ended() <-chan struct{}          // closed when the membership has ended
	leave(ctx context.Context) error // Leave
}

// stay is Stay's loop: join, stay until ctx or the membership ends, leave
// when ctx ended, return the session's end, join again after a pause when
// the membership alone was lost.
func stay(ctx context.Context, s *Session, what string, join func(context.Context) (stayer, error)) error {
	for {
		m, err := join(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		select {
		case <-ctx.Done():
		case <-m.ended():
		}
		if err := s.Err(); err != nil {
			<-m.ended()
			return err // the session's end comes first, even when ctx ended too
		}
		if ctx.Err() != nil {
			rctx, rcancel := releaseCtx(ctx)
			err := m.leave(rctx)
			rcancel()
			return ignoreLost(err, ErrMembershipLost)
		}
		_ = m.leave(ctx) // only frees the handle: the membership is lost already
		if err := s.Err(); err != nil {
			return err
		}
		opsOf(s).Log().Warn(what+" membership lost while the session lives; joining again", "path", m.Node())
		if err := client.SleepCtx(ctx, rejoinPause(opsOf(s).Rand())); err != nil {
			return nil
		}
	}
}

// rejoinPause is the random pause before a re-join, so that members whose
// nodes were removed together do not all come back at once; drawn from r
// (the session's).
func rejoinPause(r *client.Rand) time.Duration {
	return client.SuperviseBackoff.Initial + time.Duration(r.Int64N(int64(client.SuperviseBackoff.Initial)*5))
}
