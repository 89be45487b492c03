package client

import "strings"

// JoinErrors is errors.Join with the texts on one line, separated by "; ":
// an error text is one line in logs and in an operator's terminal, and
// errors.Join's newlines split it. The non-nil errors stay reachable with
// errors.Is and errors.As. It returns nil when every err is nil, and the
// error itself when only one is not.
func JoinErrors(errs ...error) error {
	var kept []error
	for _, err := range errs {
		if err != nil {
			kept = append(kept, err)
		}
	}
	switch len(kept) {
	case 0:
		return nil
	case 1:
		return kept[0]
	}
	return joined(kept)
}

// joined is JoinErrors's error.
type joined []error

func (j joined) Error() string {
	texts := make([]string, len(j))
	for i, err := range j {
		texts[i] = err.Error()
	}
	return strings.Join(texts, "; ")
}

func (j joined) Unwrap() []error { return j }
