// Command pruneimports removes unused imports from Go files and gofmts them.
//
// ygnmi's generator gives every file it writes the same import block, so most
// files import packages they never use and do not compile; lemming runs
// goimports over its output for the same reason. This command does only that
// part of goimports, with the standard library alone, so that regenerating
// gen/ needs no tool beyond those pinned in go.mod.
//
// Usage: go run ./internal/pruneimports DIR...
//
// Every *.go file directly in each DIR is rewritten in place when it changes.
// An import is kept when its name (the explicit name, or the last element of
// its path) is used as a package qualifier, or when it is a blank or dot
// import.
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: pruneimports DIR...")
		os.Exit(2)
	}
	for _, dir := range os.Args[1:] {
		if err := pruneDir(dir); err != nil {
			fmt.Fprintln(os.Stderr, "pruneimports:", err)
			os.Exit(1)
		}
	}
}

func pruneDir(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return err
	}
	sort.Strings(files)
	for _, f := range files {
		if err := pruneFile(f); err != nil {
			return err
		}
	}
	return nil
}

func pruneFile(name string) error {
	src, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	out, err := prune(name, src)
	if err != nil {
		return err
	}
	if bytes.Equal(out, src) {
		return nil
	}
	return os.WriteFile(name, out, 0o644)
}

// prune returns src without its unused imports, gofmt-ed.
func prune(name string, src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok {
				used[id.Name] = true
			}
		}
		return true
	})
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.IMPORT {
			continue
		}
		kept := gd.Specs[:0]
		for _, s := range gd.Specs {
			is := s.(*ast.ImportSpec)
			p, err := strconv.Unquote(is.Path.Value)
			if err != nil {
				return nil, fmt.Errorf("%s: bad import path %s", name, is.Path.Value)
			}
			local := path.Base(p)
			if is.Name != nil {
				local = is.Name.Name
			}
			if local == "_" || local == "." || used[local] {
				kept = append(kept, s)
			}
		}
		gd.Specs = kept
	}
	// Drop import declarations left empty.
	decls := f.Decls[:0]
	for _, decl := range f.Decls {
		if gd, ok := decl.(*ast.GenDecl); ok && gd.Tok == token.IMPORT && len(gd.Specs) == 0 {
			continue
		}
		decls = append(decls, decl)
	}
	f.Decls = decls
	f.Imports = nil
	var buf bytes.Buffer
	if err := format.Node(&buf, fset, f); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// A second pass through the formatter normalises the blank lines the
	// removed specs leave behind.
	return format.Source(buf.Bytes())
}
