package runtime

// A TwoPCCache mirrors the votes and the decision of every transaction of
// a two-phase commit resource, as TwoPhaseCommit.Status reads them: a
// Cache over the nodes one level below each transaction node (the
// participants' vote and presence nodes, the decision, the coordinator's
// node), whose data it reads when a node appears and again when it
// changes (a vote node goes from empty to "joined" to the vote), and
// whose states it derives in memory. It does not read the transaction's
// payload (the transaction node's own data).
//
// Its methods are LockCache's (see there), with the transaction's
// TxStatus as the value (Proposed is always true): a transaction is there
// while it has a node below it (from its Propose, whose one multi creates
// the vote nodes, until Remove); Events has one event per join, vote,
// presence lost and decision.
type TwoPCCache[K comparable] struct {
	*childCache[K, []byte, TxStatus]
}

// NewTwoPCCache returns a cache of the transactions of tmpl (the
// transaction nodes, as NewTwoPhaseCommit's paths) whose participants are
// participants (the resource's, in its order: TxStatus.Votes follows it),
// keyed by key(parameters). opts are the Cache's (WithMaxNodes bounds the
// nodes held: about two per participant and two per transaction). It
// holds nothing until Run; it fails only when tmpl is invalid.
func NewTwoPCCache[K comparable](tmpl Template, key func(Params) K, participants []Participant, opts ...CacheOption) (*TwoPCCache[K], error) {
	parts := append([]Participant(nil), participants...)
	derive := func(es []*CacheEntry[childKey[K], []byte]) (TxStatus, []string) { return deriveTx(es, parts) }
	c, err := newChildCache(tmpl, key, BytesCodec(), derive, opts)
	if err != nil {
		return nil, err
	}
	return &TwoPCCache[K]{c}, nil
}

// deriveTx reads one transaction's votes and decision from its nodes, as
// Status does. What the state shows is every node below the transaction
// (a vote node's data changes are events of their own).
func deriveTx[K comparable](es []*CacheEntry[childKey[K], []byte], parts []Participant) (TxStatus, []string) {
	byName := make(map[string]*CacheEntry[childKey[K], []byte], len(es))
	shown := make([]string, 0, len(es))
	for _, e := range es {
		byName[e.Key.name] = e
		shown = append(shown, e.Path)
	}
	if len(shown) == 0 {
		return TxStatus{}, nil
	}
	st := TxStatus{Proposed: true}
	for _, p := range parts {
		var vote []byte
		if e := byName[string(p)]; e != nil {
			vote = e.Value
		}
		st.Votes = append(st.Votes, voteStatus(p, vote, byName[string(p)+txPresenceExt] != nil))
	}
	if e := byName[txDecision]; e != nil {
		st.Decision, _ = parseDecision(e.Value)
	}
	return st, shown
}
