package runtime

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"

	"github.com/zkgen/zkgen/runtime/internal/client"
)

// Sentinel errors of the two-phase commit, tested with errors.Is.
var (
	// ErrTxExists means Propose found the transaction already proposed.
	ErrTxExists = errors.New("twopc: transaction already proposed")
	// ErrNoTx means the transaction node is missing where it must exist.
	ErrNoTx = errors.New("twopc: no such transaction")
	// ErrUnknownParticipant means a participant is not one of the
	// transaction's declared participants.
	ErrUnknownParticipant = errors.New("twopc: unknown participant")
	// ErrAlreadyJoined means Join found the participant already joined (by
	// this or another session) or already voted.
	ErrAlreadyJoined = errors.New("twopc: participant already joined or voted")
	// ErrAlreadyVoted means Vote found a different vote already cast for the
	// participant. Votes never change.
	ErrAlreadyVoted = errors.New("twopc: participant already voted")
	// ErrPresenceLost means a participant's presence node vanished (its
	// session ended) before it voted: it cannot vote any more, and the
	// transaction aborts.
	ErrPresenceLost = client.EndError("twopc: presence lost before voting")
)

// Participant names one site of a two-phase commit. Generated code declares
// one constant per participant of the spec.
type Participant string

// Decision is a participant's vote and a transaction's outcome.
type Decision int

// Votes and outcomes.
const (
	// Commit votes for committing; as an outcome, every participant
	// committed.
	Commit Decision = iota + 1
	// Abort votes against; as an outcome, some participant aborted or
	// crashed before voting, or the transaction was aborted with ForceAbort.
	Abort
)

// String returns "commit" or "abort" (the text stored in ZooKeeper).
func (d Decision) String() string {
	switch d {
	case Commit:
		return "commit"
	case Abort:
		return "abort"
	}
	return fmt.Sprintf("Decision(%d)", int(d))
}

func parseDecision(data []byte) (Decision, bool) {
	switch string(data) {
	case "commit":
		return Commit, true
	case "abort":
		return Abort, true
	}
	return 0, false
}

// TwoPCOption configures a two-phase commit handle:
// WithCoordinatorNotify, WithNodeACL.
type TwoPCOption interface{ applyTwoPC(*twoPCConfig) }

type twoPCOptionFunc func(*twoPCConfig)

func (f twoPCOptionFunc) applyTwoPC(c *twoPCConfig) { f(c) }

type twoPCConfig struct {
	handleConfig
	coordinator bool
}

// Node names inside a transaction. Participant names cannot contain ".",
// so these never collide with a participant's vote node.
const (
	txDecision    = ".decision"
	txCoordinator = ".coordinator"
	txPresenceExt = ".present"
	txJoined      = "joined"
)

// --- Two-phase commit protocol
//
// The ZooKeeper guide's two-phased commit on one transaction node:
//
//	<tx>                    persistent; the transaction payload
//	<tx>/<participant>      persistent, created empty by the coordinator;
//	                        "joined", then the vote: "commit" or "abort"
//	<tx>/<participant>.present  ephemeral, while a joined participant has not voted
//	<tx>/.decision          persistent; "commit" or "abort", created once
//	<tx>/.coordinator       ephemeral; the proposer's owner metadata
//
// The coordinator (Propose) creates the transaction, one vote node per
// participant and its own ephemeral .coordinator node in one multi (so
// after a lost reply it can tell whether the proposal is its own). A
// participant may Join: it marks its vote node "joined" and creates its
// ephemeral presence node, in one multi, so if its session ends before it
// votes the transaction aborts (the guide's second drawback, solved as it
// suggests). Vote writes the participant's node once, atomically with a
// check that its presence still exists (and removes it).
//
// Deciding (evaluate, decide): abort as soon as any participant voted abort
// or lost its presence before voting, commit when all committed. The
// decision is written once, durably, with a create: the first decider's
// create wins and every caller of Outcome returns the decision node's
// content. Abort and commit evidence also exclude each other: votes are
// written once, and a participant whose presence is gone can no longer
// vote.
//
// With notify "all" every caller of Outcome watches the votes (O(n²)
// notifications for n participants); with WithCoordinatorNotify only the
// coordinator does, and everyone else watches only the decision node
// (O(n)).

// TwoPhaseCommit is a two-phase commit on one transaction node: a
// coordinator proposes, participants vote commit or abort, and Outcome
// returns the decision — Abort as soon as any participant voted abort or,
// having joined, lost its session before voting; Commit once all
// committed. Every observer sees the same decision, and it never changes.
// Participants that Join make the transaction abort if they crash before
// voting.
//
// With notify "all" (the default) every caller of Outcome watches the
// votes and can decide. With WithCoordinatorNotify only the coordinator
// does, and publishes the decision; everyone else watches only the
// decision. The coordinator is the session that called Propose, through
// any of its handles (or any handle calling Coordinate); it must call
// Outcome or Coordinate for anyone to learn the outcome.
//
// Methods are safe for concurrent use.
type TwoPhaseCommit[T any] struct {
	s           *Session
	dir         string
	err         error
	codec       Codec[T]
	parts       []Participant
	coordinator bool     // notify: coordinator
	acl         []zk.ACL // of created nodes; empty: the session's default
	name        string   // WithResourceName

	mu       sync.Mutex
	proposed bool                   // this handle created the transaction
	joined   map[Participant]string // presence nodes this handle created
}

// WithCoordinatorNotify selects the O(n) variant: only the coordinator
// watches the votes and publishes the decision. Default: every caller of
// Outcome watches the votes.
func WithCoordinatorNotify() TwoPCOption {
	return twoPCOptionFunc(func(c *twoPCConfig) { c.coordinator = true })
}

// NewTwoPhaseCommit returns a handle on the transaction node p with the
// given participants (every handle of one transaction must list the same
// ones) and payloads encoded by codec. It does no I/O. If p is invalid, or a
// participant name is empty, repeated, contains "." or is not a valid
// node name, every method returns the error.
func NewTwoPhaseCommit[T any](s *Session, p Path, codec Codec[T], participants []Participant, opts ...TwoPCOption) *TwoPhaseCommit[T] {
	var cfg twoPCConfig
	for _, o := range opts {
		if o != nil {
			o.applyTwoPC(&cfg)
		}
	}
	t := &TwoPhaseCommit[T]{s: s, dir: p.String(), err: p.Err(), codec: codec, coordinator: cfg.coordinator, acl: cfg.acl, name: cfg.name,
		parts: append([]Participant(nil), participants...), joined: map[Participant]string{}}
	seen := map[Participant]bool{}
	for _, pt := range participants {
		switch {
		case t.err != nil:
		case checkSegment(string(pt)) != "":
			t.err = fmt.Errorf("twopc %s: participant %q: %s", t.dir, pt, checkSegment(string(pt)))
		case strings.Contains(string(pt), "."):
			t.err = fmt.Errorf("twopc %s: participant %q contains \".\"", t.dir, pt)
		case seen[pt]:
			t.err = fmt.Errorf("twopc %s: participant %q listed twice", t.dir, pt)
		}
		seen[pt] = true
	}
	if t.err == nil && len(participants) == 0 {
		t.err = fmt.Errorf("twopc %s: no participants", t.dir)
	}
	return t
}

// Path returns the transaction node's path.
func (t *TwoPhaseCommit[T]) Path() string { return t.dir }

// Participants returns the participants of the transaction.
func (t *TwoPhaseCommit[T]) Participants() []Participant {
	return append([]Participant(nil), t.parts...)
}

func (t *TwoPhaseCommit[T]) votePath(p Participant) string { return joinPath(t.dir, string(p)) }
func (t *TwoPhaseCommit[T]) presencePath(p Participant) string {
	return joinPath(t.dir, string(p)+txPresenceExt)
}
func (t *TwoPhaseCommit[T]) decisionPath() string { return joinPath(t.dir, txDecision) }

func (t *TwoPhaseCommit[T]) check(p Participant) error {
	if t.err != nil {
		return t.err
	}
	for _, q := range t.parts {
		if q == p {
			return nil
		}
	}
	return fmt.Errorf("twopc %s: %q: %w", t.dir, p, ErrUnknownParticipant)
}

// Propose creates the transaction with an empty payload; see ProposeWith.
func (t *TwoPhaseCommit[T]) Propose(ctx context.Context) error {
	return t.propose(ctx, nil)
}

// ProposeWith creates the transaction node carrying payload, one empty
// vote node per participant and the coordinator's ephemeral marker, in one
// multi (parents are created as container nodes). It returns ErrTxExists if the transaction was proposed already.
// It does not block beyond the write. After a connection loss it looks: its
// own .coordinator node means the proposal went through (nil), a
// transaction without it is someone else's (ErrTxExists), no transaction
// means the multi did not happen and it is sent again. The nodes stay until
// Remove (.coordinator until then or the end of the coordinator's session).
func (t *TwoPhaseCommit[T]) ProposeWith(ctx context.Context, payload T) error {
	if t.err != nil {
		return t.err
	}
	data, err := t.codec.Encode(payload)
	if err != nil {
		return fmt.Errorf("twopc %s: encoding payload: %w", t.dir, err)
	}
	return t.propose(ctx, data)
}

func (t *TwoPhaseCommit[T]) propose(ctx context.Context, data []byte) (err error) {
	defer telOf(t.s).begin(ctx, opPropose, "two_phase_commit", t.name, t.dir).end(&err)
	if t.err != nil {
		return t.err
	}
	ops := []any{&zk.CreateRequest{Path: t.dir, Data: data, Acl: opsOf(t.s).NodeACL(t.acl)}}
	for _, p := range t.parts {
		ops = append(ops, &zk.CreateRequest{Path: t.votePath(p), Acl: opsOf(t.s).NodeACL(t.acl)})
	}
	marker := joinPath(t.dir, txCoordinator)
	ops = append(ops, &zk.CreateRequest{Path: marker, Data: ownerData(t.s, ""), Acl: opsOf(t.s).NodeACL(t.acl), Flags: zk.FlagEphemeral})
	return opsOf(t.s).RetryUncertain(ctx, client.UncertainWrite{Op: "multi", Path: t.dir,
		Attempt: func(int) (client.Outcome, error) {
			res, err := opsOf(t.s).Multi(ctx, ops...)
			i, opErr := client.FailedOp(res)
			switch {
			case err == nil:
				t.setProposed()
				return client.OutcomeKnown, nil
			case i == 0 && errors.Is(opErr, zk.ErrNodeExists):
				return client.OutcomeKnown, fmt.Errorf("twopc %s: %w", t.dir, ErrTxExists)
			case i == 0 && client.IsNoNode(opErr):
				if err := opsOf(t.s).EnsurePath(ctx, t.acl, path.Dir(t.dir)); err != nil {
					return client.OutcomeKnown, err
				}
				return client.OutcomeResend, nil
			}
			return client.AfterSend("multi", t.dir, err)
		},
		Settle: func(ctx context.Context) (client.Outcome, error) { return t.proposalSettled(ctx, marker) },
	})
}

// proposalSettled learns whether a proposal whose reply was lost went
// through. The multi is all or nothing: our marker, owned by our (living)
// session, says it did; a transaction without it is someone else's.
func (t *TwoPhaseCommit[T]) proposalSettled(ctx context.Context, marker string) (client.Outcome, error) {
	if err := opsOf(t.s).Sync(ctx, t.dir); err != nil {
		return client.OutcomeKnown, err
	}
	_, st, gerr := opsOf(t.s).Get(ctx, marker)
	switch {
	case gerr == nil && st.EphemeralOwner == t.s.ID():
		t.setProposed()
		return client.OutcomeKnown, nil
	case gerr != nil && !client.IsNoNode(gerr):
		return client.OutcomeKnown, gerr
	}
	if _, _, gerr := opsOf(t.s).Get(ctx, t.dir); gerr == nil {
		return client.OutcomeKnown, fmt.Errorf("twopc %s: %w", t.dir, ErrTxExists)
	} else if !client.IsNoNode(gerr) {
		return client.OutcomeKnown, gerr
	}
	return client.OutcomeResend, nil
}

// setProposed records that this handle created the transaction, and that
// its session did (for Outcome on the session's other handles).
func (t *TwoPhaseCommit[T]) setProposed() {
	t.mu.Lock()
	t.proposed = true
	t.mu.Unlock()
	holdersOf(t.s).add(txProposed{t.dir}, t)
}

// txProposed is a two-phase commit the session proposed and has not seen
// decided, as the session's holders know it (holders.go).
type txProposed struct{ dir string }

// proposedHere reports whether this handle, or another handle of its
// session, proposed the transaction and it is not yet decided as far as
// the session saw (see forgetProposal).
func (t *TwoPhaseCommit[T]) proposedHere() bool {
	t.mu.Lock()
	proposed := t.proposed
	t.mu.Unlock()
	return proposed || len(heldBy[any](t.s, txProposed{t.dir})) > 0
}

// forgetProposal drops the session's record of having proposed the
// transaction, once a decision stands or it is removed: the record lives
// no longer than the coordinator's work.
func (t *TwoPhaseCommit[T]) forgetProposal() { holdersOf(t.s).drop(txProposed{t.dir}) }

// Payload reads the transaction's payload. A transaction not proposed yet
// is an error wrapping ErrNoTx.
func (t *TwoPhaseCommit[T]) Payload(ctx context.Context) (T, error) {
	var zero T
	if t.err != nil {
		return zero, t.err
	}
	data, _, err := opsOf(t.s).Get(ctx, t.dir)
	if client.IsNoNode(err) {
		return zero, fmt.Errorf("twopc %s: %w", t.dir, ErrNoTx)
	}
	if err != nil {
		return zero, err
	}
	v, err := t.codec.Decode(data)
	if err != nil {
		return zero, fmt.Errorf("twopc %s: payload: %w", t.dir, err)
	}
	return v, nil
}

// waitExists blocks until path exists, ctx ends or the session ends.
func (t *TwoPhaseCommit[T]) waitExists(ctx context.Context, p string) (client.Result, error) {
	for {
		r, ok, err := opsOf(t.s).GetOrExistsW(ctx, p)
		if err != nil || ok {
			return r, err
		}
		select {
		case <-r.Watch:
		case <-ctx.Done():
			return r, ctx.Err()
		case <-t.s.Done():
			return r, t.s.Err()
		}
	}
}

// Join announces participant p: it blocks until the transaction is proposed
// (or ctx ends: nothing is left behind then), then marks p's vote node
// "joined" and creates p's ephemeral presence node in one multi. From then
// on, if this session ends before p votes, the transaction aborts. It
// returns ErrAlreadyJoined if p has joined or voted already.
func (t *TwoPhaseCommit[T]) Join(ctx context.Context, p Participant) (err error) {
	defer telOf(t.s).begin(ctx, opJoin, "two_phase_commit", t.name, t.dir).end(&err)
	if err := t.check(p); err != nil {
		return err
	}
	return opsOf(t.s).RetryUncertain(ctx, client.UncertainWrite{Op: "multi", Path: t.votePath(p),
		Attempt: func(int) (client.Outcome, error) { return t.joinOnce(ctx, p) },
		Settle: func(ctx context.Context) (client.Outcome, error) {
			// Did it go through? Our presence node says so.
			if _, st, gerr := opsOf(t.s).Get(ctx, t.presencePath(p)); gerr == nil && st.EphemeralOwner == t.s.ID() {
				t.setJoined(p)
				return client.OutcomeKnown, nil
			}
			return client.OutcomeResend, nil
		},
	})
}

// joinOnce is one attempt of Join.
func (t *TwoPhaseCommit[T]) joinOnce(ctx context.Context, p Participant) (client.Outcome, error) {
	r, err := t.waitExists(ctx, t.votePath(p))
	if err != nil {
		return client.OutcomeKnown, err
	}
	if r.Stat.Version != 0 {
		return client.OutcomeKnown, fmt.Errorf("twopc %s: %s: %w", t.dir, p, ErrAlreadyJoined)
	}
	_, err = opsOf(t.s).Multi(ctx,
		&zk.SetDataRequest{Path: t.votePath(p), Data: []byte(txJoined), Version: 0},
		&zk.CreateRequest{Path: t.presencePath(p), Data: ownerData(t.s, ""), Acl: opsOf(t.s).NodeACL(t.acl), Flags: zk.FlagEphemeral})
	switch {
	case err == nil:
		t.setJoined(p)
		return client.OutcomeKnown, nil
	case errors.Is(err, zk.ErrBadVersion), errors.Is(err, zk.ErrNodeExists):
		return client.OutcomeKnown, fmt.Errorf("twopc %s: %s: %w", t.dir, p, ErrAlreadyJoined)
	case client.IsNoNode(err):
		return client.OutcomeResend, nil // removed and proposed again meanwhile
	}
	return client.AfterSend("multi", t.votePath(p), err)
}

// setJoined records that this handle created p's presence node.
func (t *TwoPhaseCommit[T]) setJoined(p Participant) {
	t.mu.Lock()
	t.joined[p] = t.presencePath(p)
	t.mu.Unlock()
}

// joinedHere returns p's presence node if this session created it (another
// of its handles joined p: handles made per call), else "".
func (t *TwoPhaseCommit[T]) joinedHere(ctx context.Context, p Participant) (string, error) {
	_, st, err := opsOf(t.s).Get(ctx, t.presencePath(p))
	switch {
	case client.IsNoNode(err):
		return "", nil
	case err != nil:
		return "", err
	case st.EphemeralOwner != t.s.ID():
		return "", nil
	}
	t.setJoined(p)
	return t.presencePath(p), nil
}

// Vote casts participant p's vote, once. If this handle joined p, the vote
// is written only while p's presence node exists (and removes it, in the
// same multi); if the presence is gone the vote is refused with
// ErrPresenceLost (the transaction aborts); the same if another handle of
// this session joined p (c.Deploy(id).Vote after c.Deploy(id).Join). A
// participant that did not join may vote directly. Voting again the same is a no-op; voting differently
// returns ErrAlreadyVoted; voting for a participant another session joined
// returns ErrAlreadyJoined. Vote blocks until the transaction is proposed,
// or ctx ends.
func (t *TwoPhaseCommit[T]) Vote(ctx context.Context, p Participant, d Decision) (err error) {
	defer telOf(t.s).begin(ctx, opVote, "two_phase_commit", t.name, t.dir).end(&err)
	if err := t.check(p); err != nil {
		return err
	}
	if d != Commit && d != Abort {
		return fmt.Errorf("twopc %s: invalid vote %v", t.dir, d)
	}
	t.mu.Lock()
	presence := t.joined[p]
	t.mu.Unlock()
	// After a connection loss, the next attempt's read tells whether the
	// vote is in.
	return opsOf(t.s).RetryUncertain(ctx, client.UncertainWrite{Op: "multi", Path: t.votePath(p),
		Attempt: func(int) (client.Outcome, error) { return t.voteOnce(ctx, p, d, presence) },
	})
}

// voteOnce is one attempt of Vote; presence is p's presence node if this
// handle joined p.
func (t *TwoPhaseCommit[T]) voteOnce(ctx context.Context, p Participant, d Decision, presence string) (client.Outcome, error) {
	r, err := t.waitExists(ctx, t.votePath(p))
	if err != nil {
		return client.OutcomeKnown, err
	}
	if string(r.Data) == txJoined && presence == "" {
		if presence, err = t.joinedHere(ctx, p); err != nil {
			return client.OutcomeKnown, err
		}
	}
	var ops []any
	switch cur, voted := parseDecision(r.Data); {
	case voted && cur == d:
		return client.OutcomeKnown, nil
	case voted:
		return client.OutcomeKnown, fmt.Errorf("twopc %s: %s voted %v: %w", t.dir, p, cur, ErrAlreadyVoted)
	case string(r.Data) == txJoined && presence == "":
		return client.OutcomeKnown, fmt.Errorf("twopc %s: %s: joined by another session: %w", t.dir, p, ErrAlreadyJoined)
	case string(r.Data) == txJoined:
		ops = []any{
			&zk.CheckVersionRequest{Path: presence, Version: -1},
			&zk.SetDataRequest{Path: t.votePath(p), Data: []byte(d.String()), Version: r.Stat.Version},
			&zk.DeleteRequest{Path: presence, Version: -1},
		}
	default:
		ops = []any{&zk.SetDataRequest{Path: t.votePath(p), Data: []byte(d.String()), Version: r.Stat.Version}}
	}
	res, err := opsOf(t.s).Multi(ctx, ops...)
	i, opErr := client.FailedOp(res)
	switch {
	case err == nil:
		return client.OutcomeKnown, nil
	case len(ops) == 3 && i == 0 && client.IsNoNode(opErr):
		return client.OutcomeKnown, fmt.Errorf("twopc %s: %s: %w", t.dir, p, ErrPresenceLost)
	case errors.Is(err, zk.ErrBadVersion), client.IsNoNode(err):
		return client.OutcomeResend, nil // changed meanwhile: read again
	}
	return client.AfterSend("multi", t.votePath(p), err)
}

// Outcome blocks until the transaction is decided and returns the decision:
// Abort as soon as any participant voted abort or lost its presence before
// voting, Commit once all committed. Every caller gets the same decision,
// and it never changes. With notify "all", or on the coordinator's handle,
// Outcome watches the votes and writes the decision itself (see
// Coordinate); otherwise it only watches the decision node. The
// coordinator is the session that proposed, whichever of its handles asks:
// c.Migrate(n).Outcome after c.Migrate(n).Propose coordinates. ctx
// cancellation returns ctx's error and leaves nothing behind (watches set
// on missing nodes stay registered on the server until those nodes appear).
func (t *TwoPhaseCommit[T]) Outcome(ctx context.Context) (Decision, error) {
	if t.err != nil {
		return 0, t.err
	}
	if t.coordinator && !t.proposedHere() {
		return t.waitDecision(ctx)
	}
	return t.Coordinate(ctx)
}

// waitDecision blocks until the decision node exists and returns it.
func (t *TwoPhaseCommit[T]) waitDecision(ctx context.Context) (Decision, error) {
	r, err := t.waitExists(ctx, t.decisionPath())
	if err != nil {
		return 0, err
	}
	d, ok := parseDecision(r.Data)
	if !ok {
		return 0, fmt.Errorf("twopc %s: decision %q: %w", t.decisionPath(), r.Data, ErrDecode)
	}
	return d, nil
}

// Coordinate does the coordinator's work whatever the notify mode: it
// watches the votes (and the presence of joined participants that have not
// voted) until the outcome is determined, writes the decision unless
// someone else did first, and returns the decision that stands. It blocks
// until then, or until ctx ends. Use it to take over from a coordinator
// that crashed.
func (t *TwoPhaseCommit[T]) Coordinate(ctx context.Context) (d Decision, err error) {
	defer telOf(t.s).begin(ctx, opCoordinate, "two_phase_commit", t.name, t.dir).end(&err)
	if t.err != nil {
		return 0, t.err
	}
	w := newTxWatches()
	defer close(w.stop)
	for {
		d, decided, err := t.evaluate(ctx, w)
		if err == nil && decided {
			d, err = t.decide(ctx, d)
		}
		if err == nil && d != 0 {
			t.forgetProposal()
		}
		if err != nil || d != 0 {
			return d, err
		}
		select {
		case <-w.wake:
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-t.s.Done():
			return 0, t.s.Err()
		}
	}
}

// txWatches turns the watches Coordinate leaves into wake-ups, and
// remembers which participants' commit votes stand: a vote is written once,
// so a commit read with a watch that has not fired since is still the
// vote, and evaluate does not read it again. Every evaluation then reads
// only the votes still open or changed, not all n.
type txWatches struct {
	wake chan struct{} // signalled when any watch fires
	stop chan struct{} // closed when Coordinate returns

	mu      sync.Mutex
	settled map[Participant]bool
}

func newTxWatches() *txWatches {
	return &txWatches{wake: make(chan struct{}, 1), stop: make(chan struct{}), settled: map[Participant]bool{}}
}

// forward wakes Coordinate when w fires.
func (x *txWatches) forward(w <-chan zk.Event) { x.forwardVote("", w) }

// forwardVote wakes Coordinate when w, the watch on participant p's vote
// node (p empty: another node), fires, and forgets p's settled vote.
func (x *txWatches) forwardVote(p Participant, w <-chan zk.Event) {
	go func() {
		select {
		case <-w:
			if p != "" {
				x.mu.Lock()
				delete(x.settled, p)
				x.mu.Unlock()
			}
			select {
			case x.wake <- struct{}{}:
			default:
			}
		case <-x.stop:
		}
	}()
}

// settle records p's commit vote, read with a watch not forwarded yet.
func (x *txWatches) settle(p Participant) {
	x.mu.Lock()
	x.settled[p] = true
	x.mu.Unlock()
}

// isSettled reports whether p's commit vote stands unchanged since it was
// read.
func (x *txWatches) isSettled(p Participant) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.settled[p]
}

// evaluate reads the decision and the votes, leaving watches (handed to
// w) on everything whose change could determine the outcome. It returns
// the standing decision (decided false), or the decision the votes
// determine (decided true), or 0 when undetermined. The votes are read
// concurrently, up to evalReads at a time: one session's requests are
// pipelined, so reading n votes takes about one round trip instead of n;
// settled commit votes (see txWatches) are not read again.
func (t *TwoPhaseCommit[T]) evaluate(ctx context.Context, w *txWatches) (d Decision, decided bool, err error) {
	r, ok, err := opsOf(t.s).GetOrExistsW(ctx, t.decisionPath())
	if err != nil {
		return 0, false, err
	}
	if ok {
		d, ok := parseDecision(r.Data)
		if !ok {
			return 0, false, fmt.Errorf("twopc %s: decision %q: %w", t.decisionPath(), r.Data, ErrDecode)
		}
		return d, false, nil
	}
	w.forward(r.Watch)
	votes := make([]voteState, len(t.parts))
	var reads []int
	for i, p := range t.parts {
		if !w.isSettled(p) {
			reads = append(reads, i)
		}
	}
	opsOf(t.s).Parallel(len(reads), evalReads, func(k int) {
		i := reads[k]
		votes[i] = t.readVote(ctx, t.parts[i], w)
	})
	abort, all := false, true
	for _, v := range votes {
		if v.err != nil {
			return 0, false, v.err
		}
		abort = abort || v.abort
		all = all && !v.pending
	}
	switch {
	case abort:
		return Abort, true, nil
	case all:
		return Commit, true, nil
	}
	return 0, false, nil
}

// evalReads bounds the votes evaluate reads at once.
const evalReads = 64

// voteState is what evaluate learned of one participant: its vote (or lost
// presence) makes the transaction abort, or it has not committed yet.
type voteState struct {
	abort, pending bool
	err            error
}

// readVote reads participant p's vote node (and presence, if it joined and
// has not voted), leaving watches handed to w; a commit vote is settled
// before its watch is forwarded, so that the watch firing unsettles it.
func (t *TwoPhaseCommit[T]) readVote(ctx context.Context, p Participant, w *txWatches) voteState {
	r, ok, err := opsOf(t.s).GetOrExistsW(ctx, t.votePath(p))
	if err != nil {
		return voteState{err: err}
	}
	defer w.forwardVote(p, r.Watch)
	if !ok { // not proposed yet
		return voteState{pending: true}
	}
	switch v, _ := parseDecision(r.Data); {
	case v == Abort:
		return voteState{abort: true}
	case v == Commit:
		w.settle(p)
		return voteState{}
	case string(r.Data) == txJoined:
		lost, err := t.presenceLost(ctx, p, w.forward)
		return voteState{abort: lost, pending: true, err: err}
	}
	return voteState{pending: true}
}

// presenceLost reports whether participant p, which joined and has not
// voted, lost its presence before voting (then the transaction aborts),
// leaving a watch (handed to forward) on its presence node while it has
// one. It reads the presence after the "joined" vote, then the vote again:
// "joined", then no presence, then still "joined" means the participant's
// session ended before it voted, and it never can vote now (a vote needs
// its presence, and it cannot join twice). An abort vote read then counts
// the same.
func (t *TwoPhaseCommit[T]) presenceLost(ctx context.Context, p Participant, forward func(<-chan zk.Event)) (bool, error) {
	pr, err := opsOf(t.s).GetW(ctx, t.presencePath(p))
	if err == nil {
		forward(pr.Watch)
		return false, nil
	}
	if !client.IsNoNode(err) {
		return false, err
	}
	again, _, err := opsOf(t.s).Get(ctx, t.votePath(p))
	if err != nil && !client.IsNoNode(err) {
		return false, err
	}
	v, _ := parseDecision(again)
	return string(again) == txJoined || v == Abort, nil
}

// decide writes decision d unless one exists, and returns the decision that
// stands.
func (t *TwoPhaseCommit[T]) decide(ctx context.Context, d Decision) (Decision, error) {
	var got Decision
	// The decision node, once it exists (ours after a lost reply, or
	// someone else's), stands.
	standing := func(ctx context.Context) (client.Outcome, error) {
		var o client.Outcome
		var err error
		got, o, err = t.standingDecision(ctx)
		return o, err
	}
	err := opsOf(t.s).RetryUncertain(ctx, client.UncertainWrite{Op: "create", Path: t.decisionPath(),
		Attempt: func(int) (client.Outcome, error) {
			_, err := client.Await(ctx, t.s, func() (string, error) {
				return opsOf(t.s).Create(t.decisionPath(), []byte(d.String()), 0, t.acl)
			})
			switch {
			case err == nil:
				got = d
				return client.OutcomeKnown, nil
			case client.IsNoNode(err):
				return client.OutcomeKnown, fmt.Errorf("twopc %s: %w", t.dir, ErrNoTx)
			case errors.Is(err, zk.ErrNodeExists):
				return standing(ctx)
			}
			return client.AfterSend("create", t.decisionPath(), err)
		},
		Settle: standing,
	})
	if err != nil {
		return 0, err
	}
	return got, nil
}

// standingDecision reads the decision node: outcomeResend when it is
// missing.
func (t *TwoPhaseCommit[T]) standingDecision(ctx context.Context) (Decision, client.Outcome, error) {
	data, _, err := opsOf(t.s).Get(ctx, t.decisionPath())
	if client.IsNoNode(err) {
		return 0, client.OutcomeResend, nil
	}
	if err != nil {
		return 0, client.OutcomeKnown, err
	}
	got, ok := parseDecision(data)
	if !ok {
		return 0, client.OutcomeKnown, fmt.Errorf("twopc %s: decision %q: %w", t.decisionPath(), data, ErrDecode)
	}
	return got, client.OutcomeKnown, nil
}

// ForceAbort decides Abort now unless the transaction is decided already,
// and returns the decision that stands (Commit if all had committed and the
// decision was written first). A coordinator uses it to give up on
// participants that never vote. It does not block beyond the writes.
func (t *TwoPhaseCommit[T]) ForceAbort(ctx context.Context) (Decision, error) {
	if t.err != nil {
		return 0, t.err
	}
	return t.decide(ctx, Abort)
}

// Remove deletes the transaction's nodes once it is decided (it returns an
// error and deletes nothing while undecided). A missing transaction is not
// an error.
func (t *TwoPhaseCommit[T]) Remove(ctx context.Context) error {
	if t.err != nil {
		return t.err
	}
	if _, _, err := opsOf(t.s).Get(ctx, t.decisionPath()); client.IsNoNode(err) {
		if _, _, err := opsOf(t.s).Get(ctx, t.dir); client.IsNoNode(err) {
			return nil
		}
		return fmt.Errorf("twopc %s: undecided: not removed", t.dir)
	} else if err != nil {
		return err
	}
	kids, err := opsOf(t.s).Children(ctx, t.dir)
	if err != nil && !client.IsNoNode(err) {
		return err
	}
	for _, k := range kids {
		if err := opsOf(t.s).Delete(ctx, joinPath(t.dir, k), -1); err != nil && !client.IsNoNode(err) {
			return err
		}
	}
	if err := opsOf(t.s).Delete(ctx, t.dir, -1); err != nil && !client.IsNoNode(err) {
		return err
	}
	t.forgetProposal()
	return nil
}

// TxStatus is a snapshot of a two-phase commit transaction.
type TxStatus struct {
	Proposed bool         // the transaction node exists
	Votes    []VoteStatus // one per participant, in the handle's order
	Decision Decision     // 0 while undecided
}

// VoteStatus is one participant's state in a transaction.
type VoteStatus struct {
	Participant Participant
	Vote        Decision // 0 while it has not voted
	Joined      bool     // it joined (announced itself) and has not voted yet
	Present     bool     // its presence node exists: joined, alive, not voted yet
}

// Status reads the transaction's votes and decision without deciding
// anything (unlike Outcome). A transaction not proposed yet has Proposed
// false.
func (t *TwoPhaseCommit[T]) Status(ctx context.Context) (TxStatus, error) {
	var st TxStatus
	if t.err != nil {
		return st, t.err
	}
	ok, err := t.s.Exists(ctx, t.dir)
	if err != nil || !ok {
		return st, err
	}
	st.Proposed = true
	for _, p := range t.parts {
		data, _, err := opsOf(t.s).Get(ctx, t.votePath(p))
		if err != nil && !client.IsNoNode(err) {
			return st, err
		}
		present, err := t.s.Exists(ctx, t.presencePath(p))
		if err != nil {
			return st, err
		}
		st.Votes = append(st.Votes, voteStatus(p, data, present))
	}
	data, _, err := opsOf(t.s).Get(ctx, t.decisionPath())
	if err != nil && !client.IsNoNode(err) {
		return st, err
	}
	st.Decision, _ = parseDecision(data)
	return st, nil
}

// voteStatus is participant p's state from its vote node's data (nil
// when it has none) and whether its presence node exists: Status's and
// TwoPCCache's reading of them.
func voteStatus(p Participant, vote []byte, present bool) VoteStatus {
	v := VoteStatus{Participant: p, Present: present}
	if string(vote) == txJoined {
		v.Joined = true
	} else {
		v.Vote, _ = parseDecision(vote)
	}
	return v
}

func (o NodeACL) applyTwoPC(c *twoPCConfig) { o.applyHandle(&c.handleConfig) }

func (o ResourceName) applyTwoPC(c *twoPCConfig) { o.applyHandle(&c.handleConfig) }
