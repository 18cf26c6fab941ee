//go:build !amd64

package host

import "errors"

// startHolder would start a fresh PID namespace's holder (see the top of
// direct.go); its few instructions are written for amd64 only
// (holder_amd64.s), so elsewhere isolated commands start through the
// init.
func startHolder() (int, error) {
	return 0, errors.New("starting the step's PID namespace: a holder is built for amd64 only")
}
