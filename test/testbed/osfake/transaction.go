package osfake

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"
)

// rpm-ostree runs one transaction at a time in its daemon, rpm-ostreed;
// a client killed mid-transaction leaves it running there, and every
// other transaction is refused until it ends or `rpm-ostree cancel`
// cancels it. The fake keeps the active transaction in a file.
const (
	// TransactionFile holds the title of the active transaction.
	TransactionFile = Dir + "/transaction"
	// HangFile, when present, makes the next transaction hang (and is
	// removed): it stays active until cancelled, and its client blocks
	// with a child process that holds its standard output and error (a
	// stuck pull, say).
	HangFile = Dir + "/hang-next-transaction"
)

// transactionTitle is the title of the transaction an rpm-ostree command
// starts, "" for a command that starts none.
func transactionTitle(args []string) string {
	if len(args) == 0 {
		return ""
	}
	switch args[0] {
	case "rebase", "cleanup", "rollback", "override":
		return strings.Join(args, " ")
	case "update", "upgrade":
		return "upgrade"
	case "kargs":
		for _, a := range args[1:] {
			for _, edit := range []string{"--append", "--delete", "--replace", "--editor"} {
				if strings.HasPrefix(a, edit) {
					return "kargs"
				}
			}
		}
	}
	return ""
}

// begin starts the transaction title, refused while another is active; a
// transaction asked to hang never returns.
func (f *fake) begin(title string) error {
	if active, ok := f.activeTransaction(); ok {
		return exitError{1, "error: Transaction in progress: " + active +
			"\n You can cancel the current transaction with `rpm-ostree cancel`"}
	}
	if err := os.WriteFile(f.path(TransactionFile), []byte(title), 0o644); err != nil {
		return fmt.Errorf("starting the transaction: %w", err)
	}
	if err := os.Remove(f.path(HangFile)); err == nil {
		return f.hang(title)
	}
	return nil
}

// end ends the active transaction.
func (f *fake) end() { _ = os.Remove(f.path(TransactionFile)) }

func (f *fake) activeTransaction() (string, bool) {
	data, err := os.ReadFile(f.path(TransactionFile))
	if err != nil {
		return "", false
	}
	return string(data), true
}

// hang blocks until the transaction is cancelled, with a child that holds
// the client's standard output and error for an hour.
func (f *fake) hang(title string) error {
	// os.Stdout and os.Stderr (files) are handed down as they are: the
	// child holds the client's own output, not a pipe of its own.
	child := exec.Command(f.path(Binary), "hold")
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, f.stdout, f.stderr
	if err := child.Start(); err != nil {
		f.end()
		return fmt.Errorf("starting the stuck child: %w", err)
	}
	fmt.Fprintln(f.stdout, "Pulling manifest...")
	for {
		if active, ok := f.activeTransaction(); !ok || active != title {
			_ = child.Process.Kill()
			_ = child.Wait()
			return exitError{1, "error: Transaction cancelled"}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hold is the stuck child: it sleeps for an hour.
func hold() error {
	time.Sleep(time.Hour)
	return nil
}

// cancel cancels the active transaction, as `rpm-ostree cancel` does.
func (f *fake) cancel(args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("Unknown option %s", args[0])
	}
	title, ok := f.activeTransaction()
	if !ok {
		fmt.Fprintln(f.stdout, "No active transaction.")
		return nil
	}
	fmt.Fprintln(f.stdout, "Cancelling transaction: "+title)
	if err := os.Remove(f.path(TransactionFile)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cancelling the transaction: %w", err)
	}
	fmt.Fprintln(f.stdout, "Cancelled.")
	return nil
}
