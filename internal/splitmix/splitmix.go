// Package splitmix is the splitmix64 finaliser (Steele, Lea and Flood,
// "Fast splittable pseudorandom number generators", OOPSLA 2014), the one
// 64-bit mixer the project's hashes use: collector leases (rendezvous
// weights) and ECMP next-hop choice. It imports nothing.
package splitmix

// Mix64 scrambles x so that inputs differing in a few bits give unrelated
// outputs.
func Mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
