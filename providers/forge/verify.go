package forge

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
)

// VerifyHMAC compares the hex signature hexSig with the HMAC-SHA256 of the
// message (its parts, in order) under every secret, in constant time:
// every secret is tried, so the time taken does not depend on which one
// matched. Forges' webhooks and Slack sign this way (forges'
// Verify and ingress's Slack route use it).
func VerifyHMAC(secrets [][]byte, hexSig string, message ...[]byte) bool {
	sig, err := hex.DecodeString(hexSig)
	if err != nil || len(sig) != sha256.Size {
		return false
	}
	matched := false
	for _, s := range secrets {
		mac := hmac.New(sha256.New, s)
		for _, part := range message {
			mac.Write(part)
		}
		if hmac.Equal(mac.Sum(nil), sig) {
			matched = true
		}
	}
	return matched
}

// TokenDigests are the SHA-256 digests of tokens, what VerifyToken
// compares with.
func TokenDigests(tokens []string) [][sha256.Size]byte {
	out := make([][sha256.Size]byte, 0, len(tokens))
	for _, t := range tokens {
		out = append(out, sha256.Sum256([]byte(t)))
	}
	return out
}

// VerifyToken compares a token sent in a header with each configured
// token's SHA-256 digest in constant time. Comparing digests, not the
// tokens, keeps the comparison's length fixed, so a token that differs only
// in length leaks nothing.
func VerifyToken(tokenDigests [][sha256.Size]byte, header string) bool {
	if header == "" {
		return false
	}
	got := sha256.Sum256([]byte(header))
	matched := 0
	for _, d := range tokenDigests {
		matched |= subtle.ConstantTimeCompare(got[:], d[:])
	}
	return matched == 1
}

// Secrets are the byte forms of secrets, what VerifyHMAC takes.
func Secrets(secrets []string) [][]byte {
	out := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		out = append(out, []byte(s))
	}
	return out
}
