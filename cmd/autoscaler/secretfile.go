package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// secretMode is the only mode of a file that holds a secret: its owner's.
const secretMode fs.FileMode = 0o600

// writeSecretFile writes secret to path for another process of this user
// to read (an activator started on its own reads the stats secret there).
// It creates the file new (O_EXCL, mode 0600, never through a symbolic
// link), or rewrites one an earlier run left: a regular file of this user
// with mode 0600 and no other link, checked on the very descriptor it then
// writes through, so nothing swapped in between gets the secret. Anything
// else (a symbolic link, a file of another owner or mode, a directory, a
// file with more links) is refused, saying what was found and the fix: a
// secret is never written where another user could read it or steer it.
func writeSecretFile(path string, secret []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, secretMode)
	switch {
	case err == nil:
		// The umask may have taken bits off 0600 (never added any): set it
		// exactly, so the next run finds the file it expects.
		if err := f.Chmod(secretMode); err != nil {
			f.Close()
			return fmt.Errorf("%s: setting mode 0600: %w", path, err)
		}
	case errors.Is(err, fs.ErrExist):
		if f, err = openOwnSecret(path); err != nil {
			return err
		}
	default:
		return fmt.Errorf("%s: creating it: %w", path, err)
	}
	_, err = f.Write(secret)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: writing the secret: %w", path, err)
	}
	return nil
}

// openOwnSecret opens an existing secret file for rewriting, truncated,
// when it is one this run may reuse (writeSecretFile).
func openOwnSecret(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		return nil, fmt.Errorf("%s is a symbolic link (to %q): the secret is written only to a file of its own, never through a link, "+
			"whose target would receive it: remove the link, or name another path", path, target)
	}
	if err := reusable(path, fi); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, fmt.Errorf("%s: opening it: %w", path, err)
	}
	opened, err := f.Stat()
	if err == nil && !os.SameFile(fi, opened) {
		err = errors.New("it was replaced while being checked")
	}
	if err == nil {
		err = reusable(path, opened)
	}
	if err == nil {
		err = f.Truncate(0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// reusable says why an existing file must not receive the secret.
func reusable(path string, fi fs.FileInfo) error {
	const fix = "remove it (a new one is created with mode 0600), or name another path"
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s exists and is not a regular file (%s): %s", path, fi.Mode().Type(), fix)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s exists and its owner cannot be read here: %s", path, fix)
	}
	if uid := os.Geteuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s exists and belongs to uid %d, not to this process's uid %d: its owner could read the secret or "+
			"replace the file; %s", path, st.Uid, uid, fix)
	}
	if perm := fi.Mode().Perm(); perm != secretMode {
		return fmt.Errorf("%s exists with mode %04o, not 0600: others could read the secret; %s, or chmod 600 it", path, perm, fix)
	}
	if st.Nlink != 1 {
		return fmt.Errorf("%s exists with %d links: the secret would be readable under another name; %s", path, st.Nlink, fix)
	}
	return nil
}
