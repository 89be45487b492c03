package runtime

import (
	"context"
	"errors"

	"github.com/go-zookeeper/zk"
)

// WithAuth adds credentials to the session once it is established, as
// ZooKeeper's addAuth does (scheme "digest", auth "user:password" for digest
// ACLs). go-zookeeper sends them again after every reconnection. Connect
// fails if the server refuses them. Default: no credentials. May be given
// more than once.
func WithAuth(scheme string, auth []byte) Option {
	return func(s *Session) {
		s.auth = append(s.auth, authInfo{scheme: scheme, auth: append([]byte(nil), auth...)})
	}
}

type authInfo struct {
	scheme string
	auth   []byte
}

// addAuth sends the WithAuth credentials; Connect calls it once the session
// is established.
func (s *Session) addAuth(ctx context.Context) error {
	for _, a := range s.auth {
		_, err := await(ctx, s, func() (struct{}, error) { return struct{}{}, s.conn.AddAuth(a.scheme, a.auth) })
		if err != nil {
			return opError("addAuth", a.scheme, err)
		}
	}
	return nil
}

// Children lists the names of path's children, in no particular order,
// retrying recoverable errors. A missing path is an error wrapping
// zk.ErrNoNode. It is a plain read for tools (zkgen inspect, provision):
// recipes use their own handles.
func (s *Session) Children(ctx context.Context, path string) ([]string, error) {
	return s.children(ctx, path)
}

// Exists reports whether path exists, retrying recoverable errors. It sets
// no watch.
func (s *Session) Exists(ctx context.Context, path string) (bool, error) {
	_, _, err := s.get(ctx, path)
	if isNoNode(err) {
		return false, nil
	}
	return err == nil, err
}

// CreatePersistent creates path and its missing ancestors as persistent
// nodes (unlike the container nodes recipes create, they stay when empty),
// with empty data and acl (the session's open ACL when none is given), and
// returns the paths it created, shallowest first. Existing nodes are left as they are, so calling it again
// creates nothing. (A create whose reply was lost and that is retried is
// reported as already existing.)
func (s *Session) CreatePersistent(ctx context.Context, path string, acl ...zk.ACL) ([]string, error) {
	if len(acl) == 0 {
		acl = s.acl
	}
	var created []string
	for i := 1; i <= len(path); i++ {
		if i < len(path) && path[i] != '/' {
			continue
		}
		p := path[:i]
		made := false
		err := s.retry(ctx, func() error {
			_, err := await(ctx, s, func() (string, error) { return s.conn.Create(p, nil, 0, acl) })
			if errors.Is(err, zk.ErrNodeExists) {
				return nil
			}
			made = err == nil
			return err
		})
		if err != nil {
			return created, opError("create", p, err)
		}
		if made {
			created = append(created, p)
		}
	}
	return created, nil
}
