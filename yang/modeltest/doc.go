// Package modeltest checks the contract between the YANG modules in ../ and
// the Go generated from them in gen/oc: complete configurations and state
// trees in JSON_IETF (RFC 7951) unmarshal into the GoStructs, validate and
// marshal back unchanged, and out-of-range values are rejected with an error
// that names the schema path. It holds tests only.
package modeltest
