//go:build node

package node

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// installSections are the sections of the docs whose sh code blocks are
// the install steps a user runs, by file and heading.
var installSections = []struct{ file, heading string }{
	{"README.md", "## Kubernetes"},
	{"docs/testbed.md", "## The real node (`up --real-node`)"},
	{"docs/kubernetes.md", "## Install"},
}

// TestDocInstallCommands runs the install commands of the README and the
// docs (the sh blocks of installSections, read from the files) on the
// testbed's real node, as written, from the repository's root, each with
// sh -c, and fails on any that fails. Where a command cannot run inside
// the testbed as written, it says why and checks what it would have done:
// hack/testbed.sh up and down (the testbed is up: make test-node ran
// them), make images (make test-node ran it as written before the tests:
// its output is checked). hack/testbed.sh run -- CMD runs CMD (the test
// is inside already). A watch (-w) runs for 5 s and must not have failed
// by then; a command sent to the background (&) runs until the others are
// done; hey's requests must all get 200s (hey exits 0 whatever they
// got). ctr finds the testbed's containerd through CONTAINERD_ADDRESS
// (the command's text is unchanged; docs/kubernetes.md says the socket
// differs on the testbed).
func TestDocInstallCommands(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	var cmds []docCommand
	for _, s := range installSections {
		got := sectionCommands(t, filepath.Join(root, s.file), s.heading)
		if len(got) == 0 {
			t.Fatalf("%s: no sh commands under %q: the extraction or the heading is wrong", s.file, s.heading)
		}
		cmds = append(cmds, got...)
	}
	sock := filepath.Join(os.Getenv("EBB_TESTBED_RUN_DIR"), "containerd", "containerd.sock")
	ran, skipped := 0, 0
	var background []*exec.Cmd
	defer func() {
		for _, c := range background {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
			_ = c.Wait()
		}
	}()
	for _, c := range cmds {
		text := strings.TrimSpace(strings.TrimPrefix(c.text, "hack/testbed.sh run -- "))
		where := fmt.Sprintf("%s:%d", c.file, c.line)
		switch {
		case strings.HasPrefix(text, "hack/testbed.sh up"), text == "hack/testbed.sh down":
			fmt.Printf("node: doc command %s %q: not run (the testbed is up: make test-node brought it up and takes it down)\n", where, c.text)
			skipped++
			continue
		case strings.HasPrefix(text, "make images"):
			if _, err := os.Stat(filepath.Join(root, "bin", "images", "images.txt")); err != nil {
				t.Errorf("%s %q: make test-node ran it before the tests, yet: %v", where, c.text, err)
			}
			fmt.Printf("node: doc command %s %q: run by make test-node before the tests (bin/images/images.txt is there)\n", where, c.text)
			skipped++
			continue
		}
		cmd := exec.Command("sh", "-c", text)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CONTAINERD_ADDRESS="+sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its children end with it
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		began := time.Now()
		ran++
		if strings.HasSuffix(strings.SplitN(text, " # ", 2)[0], "&") {
			if err := cmd.Start(); err != nil {
				t.Errorf("%s %q: %v", where, c.text, err)
			}
			background = append(background, cmd)
			time.Sleep(2 * time.Second) // a port-forward listening
			fmt.Printf("node: doc command %s %q: started in the background\n", where, c.text)
			continue
		}
		limit := 10 * time.Minute
		watch := strings.Contains(" "+text+" ", " -w ")
		if watch {
			limit = 5 * time.Second
		}
		err := runFor(cmd, limit)
		took := time.Since(began).Round(100 * time.Millisecond)
		switch {
		case watch && err == errStillRunning:
			fmt.Printf("node: doc command %s %q: watched for %v, no error\n", where, c.text, limit)
		case err != nil:
			t.Errorf("%s %q failed after %v: %v\n%s", where, c.text, took, err, tail(out.String(), 2000))
		case strings.Contains(text, "go tool hey") && (!strings.Contains(out.String(), "[200]") || strings.Contains(out.String(), "Error distribution")):
			// hey exits 0 whatever its requests got.
			t.Errorf("%s %q: its requests got other than 200s:\n%s", where, c.text, tail(out.String(), 2000))
		default:
			fmt.Printf("node: doc command %s %q: ok in %v: %s\n", where, c.text, took, lastLine(out.String()))
		}
	}
	fmt.Printf("node: doc install commands: %d run, %d not run (said why)\n", ran, skipped)
}

// docCommand is one command of a doc's sh block.
type docCommand struct {
	file, text string
	line       int
}

// sectionCommands are the commands of the sh code blocks under heading (up
// to the next heading of the same or a higher level), a line ending in \
// joined with the next; comment lines are left out.
func sectionCommands(t *testing.T, path, heading string) []docCommand {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	level := strings.Index(heading, " ")
	var out []docCommand
	inSection, inBlock, cont := false, false, ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if !inBlock && strings.HasPrefix(line, "#") {
			l := strings.Index(line, " ")
			switch {
			case line == heading:
				inSection = true
			case inSection && l > 0 && l <= level:
				inSection = false
			}
			continue
		}
		switch {
		case !inBlock && (trimmed == "```sh" || trimmed == "```bash"):
			inBlock = true
		case inBlock && trimmed == "```":
			inBlock = false
		case inBlock && inSection && trimmed != "" && !strings.HasPrefix(trimmed, "#"):
			if s, ok := strings.CutSuffix(trimmed, "\\"); ok {
				cont += s + " "
				continue
			}
			out = append(out, docCommand{file: filepath.Base(path), text: cont + trimmed, line: n})
			cont = ""
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var errStillRunning = fmt.Errorf("still running")

// runFor runs cmd for at most limit: errStillRunning (and its process
// group ended) when it had not ended by then.
func runFor(cmd *exec.Cmd, limit time.Duration) error {
	if err := cmd.Start(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		<-done
		return errStillRunning
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return tail(s, 200)
}
