package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goBlocks returns the Go code blocks of a Markdown file that use ygnmi.
func goBlocks(md string) []string {
	var out []string
	var cur *strings.Builder
	for _, l := range strings.Split(md, "\n") {
		switch t := strings.TrimSpace(l); {
		case cur == nil && t == "```go":
			cur = &strings.Builder{}
		case cur != nil && t == "```":
			if strings.Contains(cur.String(), "ygnmi.") {
				out = append(out, cur.String())
			}
			cur = nil
		case cur != nil:
			cur.WriteString(l + "\n")
		}
	}
	return out
}

// snippetMain wraps a doc block into a program: the block runs with conn
// (a *grpc.ClientConn to the address in os.Args[1]) and ctx in scope.
const snippetMain = `package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/lhcnp/lhcnp/gen/oc"
	"github.com/lhcnp/lhcnp/gen/oc/ocpath"
	"github.com/openconfig/gnmi/proto/gnmi"
	"github.com/openconfig/ygnmi/ygnmi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

var (
	_ = fmt.Sprint
	_ = oc.Unmarshal
	_ = ocpath.Root
	_ = gnmi.NewGNMIClient
	_ = ygnmi.NewClient
)

func main() {
	conn, err := grpc.NewClient(os.Args[1], grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

%s
}
`

// TestDocYgnmiSnippet compiles every ygnmi block of docs/gnmi-target.md,
// as written, into a program (through go's -overlay, nothing is written
// into the tree) and runs it against a test switch: the ygnmi example of
// the docs cannot break silently either.
func TestDocYgnmiSnippet(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles a program")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(root, "docs", "gnmi-target.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlocks(string(md))
	if len(blocks) == 0 {
		t.Fatal("no ygnmi block in docs/gnmi-target.md")
	}
	r := startSwitch(t)
	for i, b := range blocks {
		dir := t.TempDir()
		src := filepath.Join(dir, "main.go")
		if err := os.WriteFile(src, []byte(strings.Replace(snippetMain, "%s", b, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay, _ := json.Marshal(map[string]map[string]string{
			"Replace": {filepath.Join(root, "cmd", "lhcnp", "docsnippet", "main.go"): src}})
		ov := filepath.Join(dir, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, "go", "run", "-overlay", ov, "./cmd/lhcnp/docsnippet", r.addr)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("ygnmi block %d of docs/gnmi-target.md: %v\n%s\nblock:\n%s", i, err, out, b)
			continue
		}
		if i == 0 && !strings.Contains(string(out), "effective-kmax 6250000") {
			t.Errorf("ygnmi block 0 printed %q, want effective-kmax 6250000", out)
		}
	}
}
