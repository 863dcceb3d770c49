package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// docCommand is one client command of a Markdown file, as written.
type docCommand struct {
	line int    // of its first line in the file
	text string // its lines joined as a shell reads them
}

// The clients whose commands the docs show and the test runs.
var docClients = []string{"gnmic ", "go tool gnmi_cli "}

// docCommands extracts every gnmic and gnmi_cli command from the shell code
// blocks of a Markdown file (fences with no info string or sh, bash, shell,
// console): lines starting with "gnmic " or "go tool gnmi_cli " (after an
// optional "$ " prompt), with the lines that continue them (a trailing
// backslash, or a single-quoted argument still open). Output blocks are
// fenced as text and skipped.
func docCommands(md string) []docCommand {
	var out []docCommand
	inShell, inFence := false, false
	var cur *docCommand
	for i, l := range strings.Split(md, "\n") {
		trimmed := strings.TrimSpace(l)
		if cur != nil && strings.Count(cur.text, "'")%2 == 1 {
			// Inside a quoted argument: the line is part of it.
			cur.text += "\n" + l
			if strings.Count(cur.text, "'")%2 == 0 && !strings.HasSuffix(trimmed, `\`) {
				out = append(out, *cur)
				cur = nil
			} else {
				cur.text = strings.TrimSuffix(cur.text, `\`)
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") {
			if inFence {
				inFence, inShell = false, false
				continue
			}
			inFence = true
			switch strings.TrimSpace(strings.TrimPrefix(trimmed, "```")) {
			case "", "sh", "bash", "shell", "console":
				inShell = true
			}
			continue
		}
		if !inShell {
			continue
		}
		if cur != nil {
			cur.text += " " + strings.TrimSuffix(trimmed, `\`)
			if !strings.HasSuffix(trimmed, `\`) && strings.Count(cur.text, "'")%2 == 0 {
				out = append(out, *cur)
				cur = nil
			}
			continue
		}
		trimmed = strings.TrimPrefix(trimmed, "$ ")
		client := false
		for _, c := range docClients {
			client = client || strings.HasPrefix(trimmed, c)
		}
		if !client {
			continue
		}
		c := docCommand{line: i + 1, text: strings.TrimSuffix(trimmed, `\`)}
		if strings.HasSuffix(trimmed, `\`) || strings.Count(c.text, "'")%2 == 1 {
			cur = &c
			continue
		}
		out = append(out, c)
	}
	return out
}

func TestDocCommandsExtracted(t *testing.T) {
	md := "text\n```sh\n$ gnmic -a x:1 --insecure capabilities\ngo tool gnmi_cli -capabilities\n" +
		"gnmic -a x:1 --insecure get \\\n  --path '/a/b'\n```\n```text\ngnmic not a command\n```\n" +
		"```yaml\ngnmic: no\n```\n" +
		"```\ngo tool gnmi_cli -a x:1 -get -proto '\n  path: <>\n  type: CONFIG'\n# comment\n```\n"
	got := docCommands(md)
	want := []docCommand{{3, "gnmic -a x:1 --insecure capabilities"}, {4, "go tool gnmi_cli -capabilities"},
		{5, "gnmic -a x:1 --insecure get  --path '/a/b'"}, {15, "go tool gnmi_cli -a x:1 -get -proto '\n  path: <>\n  type: CONFIG'"}}
	if len(got) != len(want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("command %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// addressRE is the -a (--address) argument of a gnmic command.
var addressRE = regexp.MustCompile(`(^|\s)(-a|--address|-address)(\s+|=)(\S+)`)

// docTargets starts, for each address the docs send commands to, what
// listens there in the docs, and returns the test instance's address. A
// doc command to an address not listed here fails the test: add the
// component that serves it (a collector's northbound, say) when documenting
// one.
var docTargets = map[string]func(t *testing.T) string{
	// `lhcnp switch --config examples/switch.yaml --insecure`
	"127.0.0.1:9339": func(t *testing.T) string { return startSwitch(t).addr },
	// a collector's northbound over two switches n1 and n2 (docs/collector.md)
	"127.0.0.1:9350": startCollectorNorthbound,
}

// docFileTargets overrides docTargets for one file: README.md and
// docs/lab.md talk to the lab fabric (`make lab`, `lhcnp switch --config
// examples/lab.yaml --insecure`), whose n1 listens on 127.0.0.1:9339, and
// docs/lab.md to the lab's northbound on 127.0.0.1:9350 (its History
// example asks for n1's wan, an interface of the lab's n1 only).
var docFileTargets = map[string]map[string]func(t *testing.T) string{
	"README.md": {"127.0.0.1:9339": func(t *testing.T) string { return startLabFabric(t, "n1")[0] }},
	"docs/lab.md": {"127.0.0.1:9339": func(t *testing.T) string { return startLabFabric(t, "n1")[0] },
		"127.0.0.1:9350": startLabNorthbound},
}

// startLabFabric runs the lab fabric of examples/lab.yaml in one process,
// every switch on a free port, and returns the gNMI addresses of the
// switches names, in their order.
func startLabFabric(t *testing.T, names ...string) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out := &syncBuffer{}
	done := make(chan error, 1)
	args := withStateDir(t, []string{"--config", "../../examples/lab.yaml", "--listen", "127.0.0.1:0", "--insecure"})
	go func() { done <- runSwitch(ctx, args, out, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("lab fabric: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("lab fabric did not stop within 20s of cancel")
		}
	})
	addrs := make([]string, len(names))
	deadline := time.Now().Add(30 * time.Second)
	for {
		found := 0
		for i, name := range names {
			if m := regexp.MustCompile(`switch ` + regexp.QuoteMeta(name) + `: gNMI on (\S+),`).FindStringSubmatch(out.String()); m != nil {
				addrs[i] = m[1]
				found++
			}
		}
		if found == len(names) {
			return addrs
		}
		if time.Now().After(deadline) {
			t.Fatalf("lab fabric: switches %v not listening within 30s:\n%s", names, out.String())
		}
		select {
		case err := <-done:
			done <- err // for the cleanup
			t.Fatalf("lab fabric returned before listening: %v", err)
		case <-time.After(50 * time.Millisecond): // polling interval
		}
	}
}

// TestDocGnmicCommands runs every gnmic (and `go tool gnmi_cli`) command of
// README.md and docs/*.md exactly as written, in the order of each file, against a test switch
// started from examples/switch.yaml (docTargets), from the repository root.
// The one rewrite is the address: `-a ADDR` becomes the test switch's
// address (tests cannot own port 9339 on a shared machine). A command must
// succeed; a subscription that does not end by itself (STREAM, POLL) must
// deliver its initial data and sync_response (a gnmic POLL, also a poll's
// answer; gnmi_cli's group display, its data), then it is stopped.
func TestDocGnmicCommands(t *testing.T) {
	t.Parallel()
	gnmicBin := needGnmic(t)
	bin := t.TempDir()
	if err := os.Symlink(gnmicBin, filepath.Join(bin, "gnmic")); err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, f := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cmds := docCommands(string(data))
		if len(cmds) == 0 {
			continue
		}
		rel, _ := filepath.Rel(root, f)
		t.Run(rel, func(t *testing.T) {
			t.Logf("%d client commands", len(cmds))
			running := map[string]string{} // doc address → test instance's
			for _, c := range cmds {
				total++
				m := addressRE.FindStringSubmatch(c.text)
				if m == nil {
					t.Errorf("%s:%d: no -a ADDRESS to point at a test target: %s", rel, c.line, c.text)
					continue
				}
				addr, ok := running[m[4]]
				if !ok {
					start := docTargets[m[4]]
					if ft, ok := docFileTargets[rel][m[4]]; ok {
						start = ft
					}
					if start == nil {
						t.Errorf("%s:%d: no test target for address %s (docTargets): %s", rel, c.line, m[4], c.text)
						continue
					}
					addr = start(t)
					running[m[4]] = addr
				}
				run := addressRE.ReplaceAllString(c.text, "${1}${2}${3}"+addr)
				runDocCommand(t, root, bin, rel, c.line, run)
			}
		})
	}
	if total == 0 {
		t.Error("no client command found in README.md and docs/*.md")
	}
}

// runDocCommand runs one command through bash with gnmic first on the PATH.
func runDocCommand(t *testing.T, dir, bin, file string, line int, command string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // stop the whole group
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	where := file + ":" + strconv.Itoa(line)
	cli := strings.HasPrefix(command, "go tool gnmi_cli")
	endless := strings.Contains(command, " subscribe") && !strings.Contains(command, "--mode once") ||
		cli && (strings.Contains(command, "-qt p") || strings.Contains(command, "-qt s"))
	if !endless {
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Errorf("%s: %s: %v\n%s", where, command, err, out)
		}
		return
	}
	poll := strings.Contains(command, "--mode poll")
	p := startProc(t, cmd, cancel)
	defer p.stop()
	// A STREAM subscription is done at its sync_response after data; a
	// POLL one answers gnmic's prompts (target, then subscription) until a
	// poll's answer has come too ("received sync response" twice).
	ok, data, syncs := false, false, 0
	for l := range p.lines {
		data = data || strings.Contains(l, `"values":`)
		if strings.Contains(l, "received sync response") {
			syncs++
		}
		if poll && strings.Contains(l, "to poll:") {
			_, _ = io.WriteString(p.stdin, "\n")
		}
		if (!poll && data && strings.Contains(compact(l), `"sync-response":true`)) ||
			(cli && (strings.Contains(compact(l), "sync_response:true") || strings.Contains(l, "TypedValue"))) ||
			(poll && syncs >= 2) {
			ok = true
			break
		}
	}
	if !ok {
		t.Errorf("%s: %s: no initial data and sync response (poll: %v):\n%s", where, command, poll, p.output())
	}
}

// docBenchCommands returns every `go test ... -bench ...` command quoted in
// inline code of a Markdown file (white space folded: a span may break
// across lines), split into words as a shell splits them (single quotes).
func docBenchCommands(md string) [][]string {
	var out [][]string
	spans := strings.Split(strings.Join(strings.Fields(md), " "), "`")
	for i := 1; i < len(spans); i += 2 {
		s := spans[i]
		if !strings.HasPrefix(s, "go test ") || !strings.Contains(s, " -bench") {
			continue
		}
		var words []string
		var w strings.Builder
		quoted, inWord := false, false
		for _, r := range s + " " {
			switch {
			case r == '\'':
				quoted, inWord = !quoted, true
			case r == ' ' && !quoted:
				if inWord {
					words = append(words, w.String())
				}
				w.Reset()
				inWord = false
			default:
				w.WriteRune(r)
				inWord = true
			}
		}
		out = append(out, words)
	}
	return out
}

// TestDocBenchCommands: every benchmark command the docs quote (`go test
// ... -bench P ./pkg`) runs the benchmarks it names alone: it has a -run
// that keeps the package's tests from running first (scaling.md's
// `go test -bench BenchmarkUtilisation ./migrations` ran the 32 tests of
// migrations, Citus clusters and all, before its benchmark), and a P that
// names a benchmark function in full matches no other of its package
// (`-bench BenchmarkWriterCitus` ran BenchmarkWriterCitusFencing too).
func TestDocBenchCommands(t *testing.T) {
	root := filepath.Join("..", "..")
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	benchDecl := regexp.MustCompile(`(?m)^func (Benchmark\w*)\(b \*testing\.B\)`)
	n := 0
	for _, f := range append([]string{filepath.Join(root, "README.md")}, docs...) {
		md, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, words := range docBenchCommands(string(md)) {
			n++
			cmd := strings.Join(words, " ")
			flags := map[string]string{}
			var pkgs []string
			for i := 2; i < len(words); i++ {
				name, value, ok := strings.Cut(strings.TrimPrefix(words[i], "-"), "=")
				switch {
				case strings.HasPrefix(words[i], "./"):
					pkgs = append(pkgs, strings.TrimSuffix(strings.TrimSuffix(words[i], "/..."), "/"))
				case strings.HasPrefix(words[i], "-") && !ok && i+1 < len(words) && !strings.HasPrefix(words[i+1], "-"):
					flags[name] = words[i+1]
					i++
				case strings.HasPrefix(words[i], "-"):
					flags[name] = value
				}
			}
			if _, ok := flags["run"]; !ok {
				t.Errorf("%s: %s: no -run: the package's tests run before the benchmark (-run '^$')", filepath.Base(f), cmd)
			}
			top, _, _ := strings.Cut(flags["bench"], "/")
			if !strings.HasPrefix(top, "Benchmark") || strings.ContainsAny(top, "$^|.*+?()[]") {
				continue
			}
			re := regexp.MustCompile(top)
			for _, pkg := range pkgs {
				files, err := filepath.Glob(filepath.Join(root, pkg, "*_test.go"))
				if err != nil || len(files) == 0 {
					t.Errorf("%s: %s: no test files in %s", filepath.Base(f), cmd, pkg)
					continue
				}
				var matched []string
				for _, tf := range files {
					src, err := os.ReadFile(tf)
					if err != nil {
						t.Fatal(err)
					}
					for _, m := range benchDecl.FindAllStringSubmatch(string(src), -1) {
						if re.MatchString(m[1]) {
							matched = append(matched, m[1])
						}
					}
				}
				if len(matched) != 1 {
					t.Errorf("%s: %s: -bench %s matches %q in %s: anchor it (%s$) to run the one it names", filepath.Base(f), cmd, top, matched, pkg, top)
				}
			}
		}
	}
	if n == 0 {
		t.Error("no go test -bench command found in README.md and docs/*.md")
	}
}
