package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/batchlet/batchlet/cli/runner"
	"github.com/batchlet/batchlet/cli/runview"
)

// Values of --output of `batchlet run` and `batchlet watch`.
const (
	outputAuto  = "auto"
	outputTUI   = "tui"
	outputPlain = "plain"
	outputJSON  = "json"
)

// outputMode resolves --output: auto is the live view when stdout is a
// terminal (and TERM is not dumb), plain lines otherwise.
func outputMode(flag string, stdout io.Writer) (string, error) {
	switch flag {
	case outputTUI, outputPlain, outputJSON:
		return flag, nil
	case outputAuto, "":
		if isTerminal(stdout) && os.Getenv("TERM") != "dumb" {
			return outputTUI, nil
		}
		return outputPlain, nil
	}
	return "", fmt.Errorf("--output must be auto, tui, plain or json, not %q", flag)
}

// withReporter runs work with the reporter of mode; for the live view it
// returns once the final view is drawn.
func withReporter(mode string, stdout, stderr io.Writer, work func(runner.Reporter)) error {
	switch mode {
	case outputTUI:
		if err := runview.Live(stdout, work); err != nil {
			return fmt.Errorf("live view: %w", err)
		}
		return nil
	case outputJSON:
		work(runview.NewJSONReporter(stdout, stderr, nil))
	default:
		work(runner.NewPlainReporter(stdout, stderr))
	}
	return nil
}

// writeResult prints how the run ended: the summary on stderr, or with
// --output json the result as the last JSON line of stdout.
func writeResult(mode string, stdout, stderr io.Writer, res *runner.Result) error {
	if mode == outputJSON {
		return runview.WriteResult(stdout, res)
	}
	runner.WriteSummary(stderr, res)
	return nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
