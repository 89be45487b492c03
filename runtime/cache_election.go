package runtime

import (
	"fmt"
	"strconv"
	"time"
)

// An ElectionCache mirrors the acknowledged leader and the candidates of
// every instance of an election resource: a Cache over the nodes one
// level below each election directory (the candidates, the leader's
// acknowledgement), whose states it derives in memory, as State and
// Candidates read them. It reads each node once when it appears and again
// when its data changes. Its methods are LockCache's (see there), with
// the instance's ElectionState as the value; an instance is there while
// it has a candidate or an acknowledgement.
type ElectionCache[K comparable, T any] struct {
	*childCache[K, []byte, ElectionState[T]]
}

// ElectionState is one election instance as an ElectionCache mirrors it.
type ElectionState[T any] struct {
	// Leader is the acknowledged leader, as State reads it: Elected is
	// false while there is no acknowledgement, or while the candidate
	// node it names is gone. Err wraps ErrDecode when the acknowledgement
	// or its payload does not decode.
	Leader LeaderState[T]
	// Candidates are the candidates in queue order, as Candidates lists
	// them: the first leads, or is about to. A candidate whose payload
	// does not decode is there with a zero Payload.
	Candidates []Candidate[T]
}

// NewElectionCache returns a cache of the election instances of tmpl (the
// election directories, as NewElection's paths), keyed by key(parameters),
// payloads decoded with codec, candidate nodes named as layout names them
// (LayoutCurator or LayoutKazoo). opts are the Cache's (WithMaxNodes
// bounds the nodes held: candidates, acknowledgements and epoch nodes).
// It holds nothing until Run; it fails only when tmpl is invalid.
func NewElectionCache[K comparable, T any](tmpl Template, key func(Params) K, codec Codec[T], layout Layout, opts ...CacheOption) (*ElectionCache[K, T], error) {
	fam := curatorLatch
	if layout == LayoutKazoo {
		fam = kazooMutex
	}
	derive := func(es []*CacheEntry[childKey[K], []byte]) (ElectionState[T], []string) {
		return deriveElection(fam, codec, es)
	}
	c, err := newChildCache(tmpl, key, BytesCodec(), derive, opts)
	if err != nil {
		return nil, err
	}
	return &ElectionCache[K, T]{c}, nil
}

// deriveElection orders the candidates of one instance and finds its
// acknowledged leader. What the state shows is its candidates' nodes and
// the acknowledgement's epoch and candidate, if it names one there.
func deriveElection[K comparable, T any](fam *family, codec Codec[T], es []*CacheEntry[childKey[K], []byte]) (ElectionState[T], []string) {
	byName := make(map[string]*CacheEntry[childKey[K], []byte], len(es))
	names := make([]string, 0, len(es))
	for _, e := range es {
		byName[e.Key.name] = e
		names = append(names, e.Key.name)
	}
	var st ElectionState[T]
	var shown []string
	for _, c := range fam.sortContenders(names) {
		e := byName[c.name]
		v, _ := codec.Decode(e.Value)
		st.Candidates = append(st.Candidates, Candidate[T]{Node: e.Path, Seq: c.seq, Created: time.UnixMilli(e.Stat.Ctime).UTC(), Payload: v})
		shown = append(shown, e.Path)
	}
	ack := byName[electionAck]
	if ack == nil {
		return st, shown
	}
	hd, payload, err := decodeAck(ack.Value)
	switch {
	case err != nil:
		st.Leader.Err = fmt.Errorf("election %s: %w", ack.Path, err)
	case byName[hd.Candidate] == nil:
		// stale: its candidate is gone, its successor has not taken over
	default:
		st.Leader = LeaderState[T]{Elected: true, Epoch: hd.Epoch, Candidate: hd.Candidate}
		if st.Leader.Payload, err = codec.Decode(payload); err != nil {
			st.Leader.Err = fmt.Errorf("election %s: leader payload: %w", ack.Path, err)
		}
	}
	return st, append(shown, ack.Path+"@"+strconv.FormatInt(hd.Epoch, 10)+"/"+strconv.FormatBool(st.Leader.Elected))
}
