package runtime

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// Owner is the metadata every lock and lease node carries as JSON data, so
// operators (and Holders) can see who holds and who waits.
type Owner struct {
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Session string    `json:"session"`           // ZooKeeper session id, 0x-hex
	Since   time.Time `json:"since"`             // when the node was created (client clock)
	Purpose string    `json:"purpose,omitempty"` // set with SetPurpose

	// RevokeRequestedAt is set by RequestRevoke (requester's clock).
	RevokeRequestedAt time.Time `json:"revoke_requested_at,omitzero"`
}

var hostname = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
})

func (s *Session) owner(purpose string) []byte {
	b, _ := json.Marshal(Owner{
		Host:    hostname(),
		PID:     os.Getpid(),
		Session: fmt.Sprintf("0x%x", s.ID()),
		Since:   time.Now().UTC().Truncate(time.Millisecond),
		Purpose: purpose,
	})
	return b
}

// parseOwner decodes node data written by this package. Nodes written by
// other libraries (Curator writes nothing or an address) give ok == false.
func parseOwner(data []byte) (o Owner, ok bool) {
	if len(data) == 0 || data[0] != '{' {
		return Owner{}, false
	}
	if err := json.Unmarshal(data, &o); err != nil {
		return Owner{}, false
	}
	return o, true
}
