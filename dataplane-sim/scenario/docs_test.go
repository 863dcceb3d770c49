package scenario

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// docBlock is one fenced code block of a Markdown file.
type docBlock struct {
	line int    // of its opening fence
	info string // the fence's info string ("yaml")
	body string
}

// docBlocks returns the fenced code blocks of a Markdown file, read as
// CommonMark reads fences: a block closes only at a line of backticks alone,
// so a closing fence with text after it leaves the block open and swallows
// the blocks that follow, which then are not returned.
func docBlocks(md string) []docBlock {
	var out []docBlock
	var cur *docBlock
	for i, l := range strings.Split(md, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case cur == nil && strings.HasPrefix(t, "```"):
			cur = &docBlock{line: i + 1, info: strings.TrimSpace(strings.TrimPrefix(t, "```"))}
		case cur != nil && strings.Trim(t, "`") == "" && strings.HasPrefix(t, "```"):
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.body += l + "\n"
		}
	}
	return out
}

// A scenario, not a fragment: it names its duration at the top level.
var topLevelDuration = regexp.MustCompile(`(?m)^duration:`)

// Every yaml block of docs/scenarios.md is a block as written (no fence
// left open swallows one), and every whole scenario among them (the fully
// commented example) loads: what a user copies runs. The fragments of
// "Generated fabrics" are loaded by TestDocsFabricExample.
func TestDocsScenarioExamples(t *testing.T) {
	doc, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	var yamlBlocks []docBlock
	for _, b := range docBlocks(string(doc)) {
		if b.info == "yaml" {
			yamlBlocks = append(yamlBlocks, b)
		}
	}
	if want := strings.Count(string(doc), "\n```yaml\n"); len(yamlBlocks) != want {
		t.Errorf("%d yaml blocks read as Markdown reads fences, %d ```yaml lines: a fence before one is not closed (text after a closing fence?)",
			len(yamlBlocks), want)
	}
	whole := 0
	for _, b := range yamlBlocks {
		if !topLevelDuration.MatchString(b.body) {
			continue
		}
		whole++
		// Named as a file of scenarios/, so that cdf/ resolves as the
		// example's comment says: relative to the scenario file.
		if _, err := Parse("../../scenarios/docs-example.yaml", []byte(b.body)); err != nil {
			t.Errorf("docs/scenarios.md:%d: the example does not load (line numbers from the block's first line):\n%v", b.line, err)
		}
	}
	if whole == 0 {
		t.Error("no whole scenario (top-level duration:) among the yaml blocks of docs/scenarios.md: the fully commented example is gone or unreadable")
	}
}

func TestDocBlocks(t *testing.T) {
	md := "a\n```yaml\nx: 1\n```\n```\nout\n``` text after the fence\n```yaml\ny: 2\n```\n"
	got := docBlocks(md)
	// The fence with text after it does not close its block: the yaml block
	// after it is part of the block it left open.
	if len(got) != 2 || got[0].info != "yaml" || got[0].body != "x: 1\n" || got[1].line != 5 || !strings.Contains(got[1].body, "y: 2") {
		t.Errorf("got %+v", got)
	}
}
