//go:build !linux

package zktest_test

import (
	"errors"

	"github.com/zkgen/zkgen/runtime/zktest"
)

// directConns needs Linux's /proc.
func directConns(*zktest.Ensemble) ([]string, error) {
	return nil, errors.New("listing connections by process needs Linux's /proc")
}
