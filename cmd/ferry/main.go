// Command ferry is Ferry's single binary: the offload master and owner
// daemons, the requester's get/put/ls, the NIC benchmark, the object-store
// operator tool and the demo.
package main

import (
	"errors"
	"fmt"
	"os"
)

// Exit codes scripts can rely on.
const (
	exitOK       = 0
	exitFailure  = 1 // the operation ran and failed
	exitUsage    = 2 // bad flags or arguments
	exitNotFound = 3 // a requested key or object does not exist
)

// usageError marks errors caused by bad command-line input.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// errNotFound is wrapped by commands whose target does not exist.
var errNotFound = errors.New("not found")

func main() {
	root := newRootCmd()
	if err := root.Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "ferry:", err)
		var ue usageError
		switch {
		case errors.As(err, &ue):
			os.Exit(exitUsage)
		case errors.Is(err, errNotFound):
			os.Exit(exitNotFound)
		default:
			os.Exit(exitFailure)
		}
	}
}
