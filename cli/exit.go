package cli

import "errors"

// exitCoder is an error that carries the process exit code to use.
type exitCoder interface {
	error
	ExitCode() int
}

func asExitCoder(err error, target *exitCoder) bool { return errors.As(err, target) }
