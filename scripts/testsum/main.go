// Command testsum reads `go test -json` on stdin, prints each package's
// result line as go test would, the whole output of every failed test, and
// a closing line "tests: N passed, N failed, N skipped". It exits 1 when a
// test or a package failed (a build failure included), 0 otherwise.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Output  string
	Elapsed float64
}

func main() {
	os.Exit(run())
}

func run() int {
	outputs := map[string]*strings.Builder{} // package/test -> output
	var passed, failed, skipped int
	pkgFailed := false
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			// Not JSON: a build error printed by the go command.
			fmt.Println(string(line))
			continue
		}
		key := e.Package + "/" + e.Test
		switch e.Action {
		case "output":
			b := outputs[key]
			if b == nil {
				b = &strings.Builder{}
				outputs[key] = b
			}
			b.WriteString(e.Output)
			if e.Test == "" && (strings.HasPrefix(e.Output, "ok ") || strings.HasPrefix(e.Output, "FAIL") || strings.HasPrefix(e.Output, "?")) {
				fmt.Print(e.Output)
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				if e.Action == "fail" {
					pkgFailed = true
					if b := outputs[key]; b != nil && !strings.Contains(b.String(), "--- FAIL") {
						fmt.Print(b.String()) // a package that failed outside a test
					}
				}
				break
			}
			switch e.Action {
			case "pass":
				passed++
			case "skip":
				skipped++
			case "fail":
				failed++
				if b := outputs[key]; b != nil {
					fmt.Print(b.String())
				}
			}
			delete(outputs, key)
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "testsum:", err)
		return 1
	}
	fmt.Printf("tests: %d passed, %d failed, %d skipped\n", passed, failed, skipped)
	if failed > 0 || pkgFailed {
		return 1
	}
	return 0
}
