// Package plural writes a count with its noun in agreement ("1 period",
// "2 periods"): one helper for the reasons, errors and messages of every
// package (nouns whose plural adds an s).
package plural

import "fmt"

// Count is n and the noun, plural unless n is 1: "1 sample", "3 samples".
func Count[N int | int64 | uint32](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Noun is the noun alone, plural unless n is 1: "key", "keys".
func Noun(n int, noun string) string {
	if n == 1 {
		return noun
	}
	return noun + "s"
}
