package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"go.opentelemetry.io/otel/metric"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Sentinel errors of the partitioner, tested with errors.Is.
var (
	// ErrPartitionLost means a partitioner member does not own the
	// partition (any more): it was released on a rebalance, Leave or
	// Close, or lost with the membership (then ErrMembershipLost is
	// wrapped too). A Guarded write for it was not applied.
	ErrPartitionLost = errors.New("partitioner: partition not owned")
)

// Partitioner shares a fixed number of partitions among the members of a
// group, each partition owned by at most one member at any moment.
//
// Under its directory:
//
//	members/_c_<uuid>-member-<seq>  ephemeral sequential, one per member
//	owners/p-<i>                    ephemeral, the owner of partition i
//	assignment                      the target plan (JSON), written by the leader
//
// The member that joined first is the leader: after a membership change
// (a join debounced, see WithRebalanceDelay) it computes the target plan from the
// previous one — balanced (⌊N/M⌋ or ⌈N/M⌉ each) and sticky (members keep
// what they have up to their quota, so a join or a leave moves about
// ⌈N/M⌉ partitions, not all) — and publishes it with a conditional write.
// Every member follows the plan: it first releases the partitions the plan
// took from it (deleting their owner nodes), then creates the owner nodes
// of the partitions the plan gives it. A create that finds the node owned
// waits with an exists watch on that one node until the old owner released
// it or its session ended; so a partition never has two owners, even in
// the middle of a rebalance or when members act on different plans.
//
// Each member watches the members directory and the assignment node, and
// each waiting member the one owner node it waits for: a membership change
// costs O(M) notifications plus one per moved partition.
//
// The directory records the partition count (see ErrSpecMismatch): a
// member generated with another count is refused before it joins.
type Partitioner[T any] struct {
	s     *Session
	dir   string
	err   error
	n     int
	names []string
	codec Codec[T]
	acl   []zk.ACL
	name  string // WithResourceName

	busy slot
	cur  atomic.Pointer[Assignment[T]] // the assignment of Join, until it ends
}

// MaxPartitions is the most partitions a partitioner has. Two reads must
// fit ZooKeeper's default jute.maxbuffer (1 MiB) and go-zookeeper's reply
// buffer: the plan, about 4 to 5 bytes per partition plus 60 per member
// (under 1 MiB up to 12,000 members at this count), and the listing of the
// owner nodes (11 bytes per partition at most, 721 KB). More is refused.
const MaxPartitions = 65536

// NewPartitioner returns a member handle for a partitioner of n partitions
// (1 to MaxPartitions) at directory p, with members encoded by codec. It
// does no I/O. opts: WithNodeACL, WithPartitionNames.
func NewPartitioner[T any](s *Session, p Path, n int, codec Codec[T], opts ...HandleOption) *Partitioner[T] {
	c := handleOptions(opts)
	err := p.Err()
	if err == nil && n < 1 {
		err = fmt.Errorf("partitioner %s: %d partitions: at least 1 is needed", p, n)
	}
	if err == nil && n > MaxPartitions {
		err = fmt.Errorf("partitioner %s: %d partitions: at most %d (MaxPartitions)", p, n, MaxPartitions)
	}
	if err == nil && c.partitionNames != nil && len(c.partitionNames) != n {
		err = fmt.Errorf("partitioner %s: %d names for %d partitions", p, len(c.partitionNames), n)
	}
	return &Partitioner[T]{s: s, dir: p.String(), err: err, n: n, names: c.partitionNames, codec: codec, acl: c.acl, name: c.name}
}

// PartitionNames is the option that names a partitioner's partitions, in
// order (see WithPartitionNames).
type PartitionNames struct{ names []string }

// WithPartitionNames returns the option that names a partitioner's
// partitions: names[i] is partition i's name (Partitioner.Name). There must
// be exactly one name per partition. The slice is copied.
func WithPartitionNames(names ...string) PartitionNames {
	return PartitionNames{names: slices.Clone(names)}
}

func (o PartitionNames) applyHandle(c *handleConfig) { c.partitionNames = o.names }

// Path returns the partitioner's directory.
func (p *Partitioner[T]) Path() string { return p.dir }

// Partitions returns the number of partitions.
func (p *Partitioner[T]) Partitions() int { return p.n }

// Name returns partition i's name: its name from WithPartitionNames, or i
// in decimal.
func (p *Partitioner[T]) Name(i int) string {
	if i >= 0 && i < len(p.names) {
		return p.names[i]
	}
	return strconv.Itoa(i)
}

// The partitioner's directories: its members' nodes and its owner nodes.
const (
	partitionerMembers = "members"
	partitionerOwners  = "owners"
)

func (p *Partitioner[T]) membersDir() string { return joinPath(p.dir, partitionerMembers) }
func (p *Partitioner[T]) ownersDir() string  { return joinPath(p.dir, partitionerOwners) }
func (p *Partitioner[T]) planPath() string   { return joinPath(p.dir, "assignment") }
func (p *Partitioner[T]) ownerNode(i int) string {
	return joinPath(p.ownersDir(), ownerPrefix+strconv.Itoa(i))
}

// ownerPrefix starts an owner node's name, which ends with its partition.
const ownerPrefix = "p-"

// ownerIndex returns the partition of owner node name among n
// partitions (ownerNode's reverse); false for any other name.
func ownerIndex(name string, n int) (int, bool) {
	num, ok := strings.CutPrefix(name, ownerPrefix)
	i, err := strconv.Atoi(num)
	if !ok || err != nil || i < 0 || i >= n || strconv.Itoa(i) != num {
		return 0, false
	}
	return i, true
}

// JoinOption configures a partitioner member (Partitioner.Join).
type JoinOption func(*joinConfig)

type joinConfig struct {
	acquired   func(partition int)
	releasing  func(partition int)
	fence      func(ctx context.Context, partition int, token int64) error
	delay      time.Duration
	streamWait time.Duration
}

// WithPartitionHooks returns the option that calls acquired(i) right after
// the member became partition i's owner (its owner node was created, and
// the fence of WithPartitionFence passed), and
// releasing(i) right before it stops being the owner: before its owner node
// is deleted, or when the ownership was lost with the session (the node
// went with it: then the call is a report after the fact, and the next
// owner may have taken the partition already, as with any recipe whose
// session the server ends before the client can tell; see Sessions and
// errors). Both are called from the member's one goroutine, in order;
// the member waits for releasing to return before it deletes the node, so
// work on the partition stopped in releasing is never concurrent with the
// next owner's. Either may be nil.
func WithPartitionHooks(acquired, releasing func(partition int)) JoinOption {
	return func(c *joinConfig) { c.acquired, c.releasing = acquired, releasing }
}

// WithPartitionFence returns the option that calls fence(ctx, i, token)
// each time the member became partition i's owner, before anyone is told:
// until fence has returned nil, Owns(i) says false, Token(i) is 0 and
// Guarded refuses; only then is i delivered on the Owned streams and the
// acquired hook called. fence registers token with the store the
// partition's work writes to. A store that refuses tokens below the
// highest it has seen for i keeps a stale owner out only once a newer
// token reached it (see [Lock.Token]); with fence, that is before i's new
// owner can act, so every write of an earlier owner of i that reaches the
// store after i was handed out is refused. ctx ends when the membership
// does. If fence fails, the member gives i up at once (its owner node is
// deleted; nothing was delivered, no hook called), logs the error and,
// after the retry policy's delay, acquires i again if the plan still
// gives it, with a new token. fence is called from the member's loop, for
// up to 64 partitions at once; the loop waits for it. Default: none.
func WithPartitionFence(fence func(ctx context.Context, partition int, token int64) error) JoinOption {
	return func(c *joinConfig) { c.fence = fence }
}

// WithRebalanceDelay returns the option that sets how long the leader waits
// after a member joined before it publishes a new plan, so that a burst of
// joins (a rolling restart) is one rebalance. A member gone is planned at
// once: its partitions have nobody to serve them. Default 200ms; 0 plans
// every change at once.
func WithRebalanceDelay(d time.Duration) JoinOption {
	return func(c *joinConfig) { c.delay = max(d, 0) }
}

// WithStreamWait returns the option that sets how long a release waits for
// an Owned stream's reader to receive the set without the partition before
// it takes the stream as abandoned (see Assignment.Owned). Default 10s.
func WithStreamWait(d time.Duration) JoinOption {
	return func(c *joinConfig) { c.streamWait = max(d, 0) }
}

// Owns reports whether this member handle owns partition i now (see
// Assignment.Owns). A handle that is not a member — a generated
// accessor's, made per call — answers for its session: whether a member
// of this partitioner on the session owns i (c.Shards().Owns(i) is true
// while c.Shards().Stay keeps the member that owns i). For work started
// from the hooks of WithPartitionHooks, under Stay, where no Assignment is
// at hand.
func (p *Partitioner[T]) Owns(i int) bool {
	a := p.answering(i)
	return a != nil && a.Owns(i)
}

// Token returns partition i's fencing token while this member handle (or,
// for a handle that is not a member, a member of its session: see Owns)
// owns it (see Assignment.Token), else 0.
func (p *Partitioner[T]) Token(i int) int64 {
	if a := p.answering(i); a != nil {
		return a.Token(i)
	}
	return 0
}

// Guarded runs ops only while this member handle (or, for a handle that is
// not a member, the member of its session that owns i: see Owns) owns
// partition i (see Assignment.Guarded). When no member of the session
// owns i it returns ErrPartitionLost and sends nothing.
func (p *Partitioner[T]) Guarded(ctx context.Context, i int, ops ...any) ([]zk.MultiResponse, error) {
	if a := p.answering(i); a != nil {
		return a.Guarded(ctx, i, ops...)
	}
	why := "no member of this session owns it"
	if len(heldBy[*Assignment[T]](p.s, partitionerHeld{p.dir})) == 0 {
		why = "not a member"
	}
	return nil, fmt.Errorf("partitioner %s: partition %d: %w (%s)", p.dir, i, ErrPartitionLost, why)
}

// partitionerHeld is a partitioner as the session's holders know it
// (holders.go).
type partitionerHeld struct{ dir string }

// answering returns the assignment that answers for partition i: this
// handle's, while it is a member; else the one of the session's members
// of the partitioner that has i in its set (at most one: a partition has
// one owner), or nil.
func (p *Partitioner[T]) answering(i int) *Assignment[T] {
	if a := p.cur.Load(); a != nil {
		return a
	}
	for _, a := range heldBy[*Assignment[T]](p.s, partitionerHeld{p.dir}) {
		a.mu.Lock()
		owned := a.owned[i]
		a.mu.Unlock()
		if owned {
			return a
		}
	}
	return nil
}

// record is the spec record of the partitioner's directory.
func (p *Partitioner[T]) record() specRecord {
	return specRecord{Kind: "partitioner", Partitions: p.n}
}

// Join makes member a member of the partitioner and returns its
// Assignment, which follows the plan until Leave or until it is lost. It
// returns once the member node exists, before any partition is owned:
// Owned streams the owned partitions. Join on a handle that is a member
// returns ErrAlreadyHeld; a directory recording another partition count,
// ErrSpecMismatch.
func (p *Partitioner[T]) Join(ctx context.Context, member T, opts ...JoinOption) (_ *Assignment[T], err error) {
	defer telOf(p.s).begin(ctx, opPartitionerJoin, "partitioner", p.name, p.dir).end(&err)
	if p.err != nil {
		return nil, p.err
	}
	cfg := joinConfig{delay: 200 * time.Millisecond, streamWait: 10 * time.Second}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	data, err := p.codec.Encode(member)
	if err != nil {
		return nil, fmt.Errorf("partitioner %s: encoding member: %w", p.dir, err)
	}
	if !p.busy.take() {
		return nil, fmt.Errorf("partitioner %s: %w", p.dir, ErrAlreadyHeld)
	}
	a, err := p.join(ctx, member, data, cfg)
	if err != nil {
		p.busy.free()
	}
	return a, err
}

func (p *Partitioner[T]) join(ctx context.Context, member T, data []byte, cfg joinConfig) (*Assignment[T], error) {
	if err := guardSpec(ctx, p.s, p.dir, p.acl, p.record()); err != nil {
		return nil, err
	}
	node, err := opsOf(p.s).CreateProtected(ctx, p.acl, p.membersDir(), groupMembers.prefix(opsOf(p.s).Rand(), 0), data)
	if err != nil {
		return nil, err
	}
	h, err := startHoldAs(ctx, p.s, node, 0, false, ErrMembershipLost)
	if err != nil {
		return nil, abandonNode(p.s, node, err)
	}
	telOf(p.s).tenureOf(h, "partitioner", p.name, p.dir)
	a := &Assignment[T]{tenure: tenure{s: p.s, h: h}, p: p, member: member, name: baseName(node), cfg: cfg,
		changed: make(chan struct{}), leave: make(chan struct{}), closeReq: make(chan struct{}), done: make(chan struct{}), owned: map[int]bool{},
		tokens: map[int]int64{}, guards: map[int]int{}, guarded: make(chan struct{}),
		streams: map[*ownedStream]struct{}{}, handed: make(chan struct{})}
	remove := client.OnClose(p.s, a.handOverForClose, a.done)
	p.cur.Store(a)
	holdersOf(p.s).add(partitionerHeld{p.dir}, a)
	go func() {
		a.run()
		p.cur.CompareAndSwap(a, nil)
		holdersOf(p.s).remove(partitionerHeld{p.dir}, a)
		remove()
	}()
	return a, nil
}

// Assignment is one member's part in a partitioner: the partitions it owns,
// which change as members join and leave. It ends with Leave (every
// partition released first) or when it is lost — the session ended or the
// member node was deleted by someone else; then the partitions are no
// longer owned (the hooks' releasing is called for each). Lost, Context and
// Node are those of the membership; context.Cause wraps ErrMembershipLost
// on loss.
type Assignment[T any] struct {
	tenure
	p      *Partitioner[T]
	member T
	name   string // the member node's name
	cfg    joinConfig

	mu      sync.Mutex
	owned   map[int]bool
	tokens  map[int]int64 // the owner node's creation zxid, per owned partition
	guards  map[int]int   // Guarded calls in flight, per partition
	guarded chan struct{} // closed and replaced when a Guarded call ends
	changed chan struct{} // closed and replaced when owned changes
	streams map[*ownedStream]struct{}
	handed  chan struct{} // closed and replaced when a stream delivered or closed

	leave     chan struct{} // closed by Leave
	leaveOnce sync.Once
	closeReq  chan struct{} // closed by Session.Close (handOverForClose)
	closeOnce sync.Once
	done      chan struct{} // closed when the member's loop has ended
	leaveErr  error         // the loop's release error, read after done
}

// Member returns the member this assignment was joined with.
func (a *Assignment[T]) Member() T { return a.member }

// Current returns the partitions the member owns now, ascending.
func (a *Assignment[T]) Current() []int {
	cur, _ := a.snapshot()
	return cur
}

func (a *Assignment[T]) snapshot() ([]int, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]int, 0, len(a.owned))
	for i := range a.owned {
		out = append(out, i)
	}
	slices.Sort(out)
	return out, a.changed
}

// setOwned records that the partitions is are owned, each with its
// fencing token (or not: tokens nil), and wakes Owned's streams once.
func (a *Assignment[T]) setOwned(is []int, owned bool, tokens []int64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for k, i := range is {
		if owned {
			a.owned[i] = true
			a.tokens[i] = tokens[k]
		} else {
			delete(a.owned, i)
			delete(a.tokens, i)
		}
	}
	close(a.changed)
	a.changed = make(chan struct{})
}

// Owns reports whether the member owns partition i, as far as this process
// can know without asking the server: i is in its set, and the membership
// is on by the session's own clock (see Lock.Held) — so the first call
// after the process was frozen past the session timeout says false, before
// the releasing hook or any goroutine of the runtime has run. Check it
// before each unit of work on a partition; what happens between the check
// and the act is fenced only by Guarded or by Token checked where the work
// lands.
func (a *Assignment[T]) Owns(i int) bool {
	a.mu.Lock()
	owned := a.owned[i]
	a.mu.Unlock()
	return owned && a.Held()
}

// Token returns partition i's fencing token while the member owns it: the
// creation zxid of its owner node. Each owner creates that node anew after
// the previous owner's is gone, so tokens strictly increase across the
// successive owners of a partition. A store that refuses tokens below the
// highest it has seen for the partition keeps a stale owner (one paused
// and replaced, say) out only once a newer owner's token reached it (see
// [Lock.Token]); [WithPartitionFence] registers the token there before the
// partition is handed out. It is 0 when i is not owned.
func (a *Assignment[T]) Token(i int) int64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.tokens[i]
}

// Guarded runs ops (go-zookeeper's *zk.CreateRequest, *zk.SetDataRequest,
// *zk.DeleteRequest, *zk.CheckVersionRequest) as one ZooKeeper multi that
// also checks that the member node and partition i's owner node exist: the
// writes happen only while the member owns i. The member does not delete
// i's owner node (on a rebalance, Leave or Close) while a Guarded call for
// i is in flight, and a call made once i is released is refused without
// being sent. Errors wrap ErrPartitionLost when the write was refused or
// not applied because the partition is not (or no longer) owned, also
// ErrMembershipLost when the membership ended (the session expired, or is
// over by its clock after a pause: nothing is sent then);
// ErrOutcomeUnknown when the reply was lost (if it was applied, it was
// while i was owned). A multi is not idempotent, so nothing is retried.
//
// What it cannot fence: an owner node deleted by someone else (an
// operator) while the member's session lives, and re-created by the next
// owner before the member noticed. Token, checked where the work lands
// (and registered there first, see [WithPartitionFence]), fences that too.
func (a *Assignment[T]) Guarded(ctx context.Context, i int, ops ...any) ([]zk.MultiResponse, error) {
	if a.zero() {
		return nil, fmt.Errorf("partition %d: %w (%w)", i, ErrPartitionLost, errZeroValue)
	}
	label := fmt.Sprintf("partitioner %s: partition %d", a.p.dir, i)
	a.mu.Lock()
	if !a.owned[i] {
		a.mu.Unlock()
		if !a.Held() {
			return nil, fmt.Errorf("%s: %w (%w)", label, ErrPartitionLost, ErrMembershipLost)
		}
		return nil, fmt.Errorf("%s: %w", label, ErrPartitionLost)
	}
	a.guards[i]++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.guards[i]--
		if a.guards[i] == 0 {
			delete(a.guards, i)
		}
		close(a.guarded)
		a.guarded = make(chan struct{})
		a.mu.Unlock()
	}()
	res, err := guardedMulti(ctx, a.s, a.h, label, []any{checkNode(a.p.ownerNode(i))},
		func() error { return ErrPartitionLost }, ops)
	if errors.Is(err, ErrMembershipLost) {
		err = fmt.Errorf("%w: %w", ErrPartitionLost, err)
	}
	return res, err
}

// waitGuards waits until no Guarded call for partition i is in flight, or
// the membership ended.
func (a *Assignment[T]) waitGuards(i int) {
	for {
		a.mu.Lock()
		n, next := a.guards[i], a.guarded
		a.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-next:
		case <-a.h.lost:
			return
		}
	}
}

// Owned streams the partitions the member owns, ascending: the current set
// first, then the set after every change. A reader slower than the changes
// receives the newest set, never a stale one. The channel is closed when
// the assignment has ended (every partition released or lost). Each call
// returns a new stream.
//
// Releases wait for the streams: before the member deletes a partition's
// owner node, every open stream has handed its reader a set without that
// partition, so a reader that stops its work on a partition as soon as it
// receives a set without it never overlaps the next owner (acquired
// partitions are delivered after their node was created and their fence
// passed, see WithPartitionFence). A stream that
// keeps a reader waiting longer than the stream wait (WithStreamWait,
// default 10s) is taken as abandoned and no longer waited for.
func (a *Assignment[T]) Owned() <-chan []int {
	if a.zero() {
		c := make(chan []int)
		close(c)
		return c
	}
	st := &ownedStream{}
	a.mu.Lock()
	a.streams[st] = struct{}{}
	a.mu.Unlock()
	out := make(chan []int)
	go func() {
		defer close(out)
		defer a.dropStream(st)
		var last []int
		sent := false
		for {
			cur, changed := a.snapshot()
			if !sent || !slices.Equal(cur, last) {
				// Offered before the send: once the send is done the reader
				// has cur, before delivered records it, and a release
				// checking in between must count cur as received.
				a.offer(st, cur)
				select {
				case out <- cur:
					last, sent = cur, true
					if hook := ownedSent.Load(); hook != nil {
						(*hook)(cur)
					}
					a.delivered(st, cur)
				case <-changed:
					a.offer(st, nil)
				case <-a.done:
					return
				}
				continue
			}
			select {
			case <-changed:
			case <-a.done:
				return
			}
		}
	}()
	return out
}

// ownedStream is one Owned stream as releases see it.
type ownedStream struct {
	last      []int // the newest set its reader received
	offered   []int // the set being sent, which the reader may hold already
	abandoned bool  // kept a release waiting too long
}

// ownedSent, set by tests only, runs after a set was sent on an Owned
// stream and before the stream records it as delivered.
var ownedSent atomic.Pointer[func(set []int)]

// offer records set as being sent on st (nil: no longer), and wakes
// releases.
func (a *Assignment[T]) offer(st *ownedStream, set []int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st.offered = set
	close(a.handed)
	a.handed = make(chan struct{})
}

// delivered records that st's reader received set and wakes releases.
func (a *Assignment[T]) delivered(st *ownedStream, set []int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st.last, st.offered = set, nil
	close(a.handed)
	a.handed = make(chan struct{})
}

func (a *Assignment[T]) dropStream(st *ownedStream) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.streams, st)
	close(a.handed)
	a.handed = make(chan struct{})
}

// handedOver reports whether every stream that is read has handed its
// reader a set without partition i, and returns the channel of the next
// delivery.
func (a *Assignment[T]) handedOver(i int) (bool, <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for st := range a.streams {
		if st.holds(i) && !st.abandoned {
			return false, a.handed
		}
	}
	return true, a.handed
}

// holds reports whether st's reader may hold partition i: in the set it
// received last, or in the one being sent.
func (st *ownedStream) holds(i int) bool {
	_, in := slices.BinarySearch(st.last, i)
	_, offered := slices.BinarySearch(st.offered, i)
	return in || offered
}

// abandonStreams marks the streams whose reader still has partition i.
func (a *Assignment[T]) abandonStreams(i int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for st := range a.streams {
		if st.holds(i) {
			st.abandoned = true
		}
	}
}

// waitHandedOver waits until every read stream has handed over partition
// i (see Owned), the stream wait passed, or the membership ended.
func (a *Assignment[T]) waitHandedOver(i int) {
	var timeout <-chan time.Time
	for {
		ok, next := a.handedOver(i)
		if ok {
			return
		}
		if timeout == nil {
			t := time.NewTimer(a.cfg.streamWait)
			defer t.Stop()
			timeout = t.C
		}
		select {
		case <-next:
		case <-a.h.lost:
			return
		case <-timeout:
			opsOf(a.s).Log().Warn("partitioner: an Owned stream was not read; no longer waiting for it", "path", a.h.node, "partition", i)
			a.abandonStreams(i)
			return
		}
	}
}

// Leave releases every owned partition (calling the releasing hook before
// each), leaves the partitioner and returns once that is done. It returns
// ErrMembershipLost if the assignment had been lost, ErrNotMember on a
// second call, ctx's error if ctx ends first (the release carries on in the
// background). The Partitioner handle can join again afterwards.
func (a *Assignment[T]) Leave(ctx context.Context) (err error) {
	if a.zero() {
		return errZeroValue
	}
	defer telOf(a.s).begin(ctx, opPartitionerLeave, "partitioner", a.p.name, a.p.dir).end(&err)
	if !a.giveUp() {
		return fmt.Errorf("partitioner %s: %w", a.p.dir, ErrNotMember)
	}
	defer a.p.busy.free()
	a.leaveOnce.Do(func() { close(a.leave) })
	select {
	case <-a.done:
		return a.leaveErr
	case <-ctx.Done():
		return ctx.Err()
	}
}

// handOverForClose is run by Session.Close while the session is alive: the
// member's loop stops, calls the releasing hook of every owned partition
// and waits until every Owned stream has handed its reader a set without
// them (see closeHandOver); the session's close then removes the owner
// nodes. If ctx ends first it says which partitions were not handed over.
func (a *Assignment[T]) handOverForClose(ctx context.Context) error {
	a.closeOnce.Do(func() { close(a.closeReq) })
	select {
	case <-a.done:
		return nil
	case <-ctx.Done():
	}
	left := a.notHandedOver()
	opsOf(a.s).Log().Warn("partitioner: Close did not wait longer for the member to hand its partitions over; closing the session anyway",
		"path", a.h.node, "partitions", left, "bound", client.CloseBound)
	return fmt.Errorf("partitioner %s: partitions %v not reported released within %v (a releasing hook or an Owned reader was still busy); the session was closed anyway, so the next owner may overlap their work",
		a.h.node, left, client.CloseBound)
}

// notHandedOver returns the partitions still owned, or still in the
// newest set a read stream's reader received.
func (a *Assignment[T]) notHandedOver() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	set := map[int]bool{}
	for i := range a.owned {
		set[i] = true
	}
	for st := range a.streams {
		if !st.abandoned {
			for _, i := range slices.Concat(st.last, st.offered) {
				set[i] = true
			}
		}
	}
	out := make([]int, 0, len(set))
	for i := range set {
		out = append(out, i)
	}
	slices.Sort(out)
	return out
}

// cleanUp removes the assignment node after the last member left, so that
// the directories (containers) go too. A member joining meanwhile writes a
// new plan: the conditional delete then fails, which is fine.
func (p *Partitioner[T]) cleanUp(ctx context.Context) {
	kids, err := opsOf(p.s).Children(ctx, p.membersDir())
	if err != nil || len(groupMembers.sortContenders(kids)) > 0 {
		return
	}
	_, st, err := opsOf(p.s).Get(ctx, p.planPath())
	if err != nil {
		return
	}
	if err := opsOf(p.s).Delete(ctx, p.planPath(), st.Version); err != nil && !client.IsNoNode(err) && !errors.Is(err, zk.ErrBadVersion) {
		opsOf(p.s).Log().Warn("partitioner: could not remove the assignment", "path", p.planPath(), "err", err)
	}
}

// PartitionOwners is a partitioner's state as read at one moment: the
// members in join order and, for each partition, the index in Members of
// its owner (-1 while nobody owns it, mid-move or with no members).
type PartitionOwners[T any] struct {
	Members []T
	Owner   []int
}

// Owners reads the members and the owner of each partition. It reads each
// member node and each owner node once (for operators and tests; members
// learn their own partitions from Owned). A missing directory is a
// partitioner without members.
func (p *Partitioner[T]) Owners(ctx context.Context) (PartitionOwners[T], error) {
	out := PartitionOwners[T]{Owner: make([]int, p.n)}
	if p.err != nil {
		return out, p.err
	}
	for i := range out.Owner {
		out.Owner[i] = -1
	}
	kids, err := opsOf(p.s).Children(ctx, p.membersDir())
	if err != nil && !client.IsNoNode(err) {
		return out, err
	}
	index := map[string]int{}
	for _, c := range groupMembers.sortContenders(kids) {
		data, _, err := opsOf(p.s).Get(ctx, joinPath(p.membersDir(), c.name))
		if client.IsNoNode(err) {
			continue
		}
		if err != nil {
			return out, err
		}
		v, err := p.codec.Decode(data)
		if err != nil {
			return out, fmt.Errorf("partitioner %s: member %s: %w", p.dir, c.name, err)
		}
		index[c.name] = len(out.Members)
		out.Members = append(out.Members, v)
	}
	for i := range out.Owner {
		data, _, err := opsOf(p.s).Get(ctx, p.ownerNode(i))
		if client.IsNoNode(err) {
			continue
		}
		if err != nil {
			return out, err
		}
		if k, ok := index[string(data)]; ok {
			out.Owner[i] = k
		}
	}
	return out, nil
}

type partitionStayer[T any] struct{ *Assignment[T] }

// ended is closed once the loss was handled: every partition reported
// released.
func (a partitionStayer[T]) ended() <-chan struct{}          { return a.done }
func (a partitionStayer[T]) leave(ctx context.Context) error { return a.Leave(ctx) }

// Stay joins the partitioner as member and stays until ctx ends (then it
// releases every partition, leaves and returns nil); the partitions come
// and go through the hooks of WithPartitionHooks, among opts. If the
// member node is deleted while the session lives, it joins again after a
// short random pause. It returns the session's end when the session ends
// (every partition reported released first), so that under Supervise or a
// generated Run it joins again on the next session.
func (p *Partitioner[T]) Stay(ctx context.Context, member T, opts ...JoinOption) error {
	return stay(ctx, p.s, "partitioner", func(ctx context.Context) (stayer, error) {
		a, err := p.Join(ctx, member, opts...)
		if err != nil {
			return nil, err
		}
		return partitionStayer[T]{a}, nil
	})
}

// partitionAcquired counts a partition a partitioner member became the
// owner of.
func (t *telemetry) partitionAcquired(name, path string) {
	if t == nil {
		return
	}
	t.partitions.Add(context.Background(), 1, metric.WithAttributes(resAttrs("partitioner", name, path)...))
}
