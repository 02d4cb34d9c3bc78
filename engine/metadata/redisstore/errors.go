package redisstore

import (
	"fmt"
	"strings"

	"github.com/ferrylabs/ferry/engine/metadata"
)

// Errors of the redis store. Both wrap metadata.ErrStore, as does every
// error of this package except a missing key (metadata.ErrNotFound).
var (
	// ErrBadOptions means Options (or the environment they were read
	// from) hold a value the store cannot use; the message names it.
	ErrBadOptions = fmt.Errorf("%w: invalid redis options", metadata.ErrStore)
	// ErrClosed means the Store was used after Close.
	ErrClosed = fmt.Errorf("%w: redis store closed", metadata.ErrStore)
)

// redactedError replaces a cause whose text would reveal the password.
type redactedError struct{ msg string }

func (e redactedError) Error() string { return e.msg }

// redact returns err, or a plain error with every occurrence of secret
// masked when err's text contains it. The masked error drops err's chain
// on purpose: a wrapped cause would print the secret again.
func redact(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return redactedError{msg: strings.ReplaceAll(err.Error(), secret, "<redacted>")}
}
