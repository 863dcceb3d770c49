package policy

import "fmt"

// Count is n of a noun in words, the noun in agreement: "1 sample", "3
// samples". Reasons (the policy's and the tuner's) are read by people; "1
// samples" reads as a slip. The nouns it is given take an "s".
func Count[N int | int64](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
