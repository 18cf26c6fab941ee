package ingress

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
)

// verifyGitHub checks an X-Hub-Signature-256 header ("sha256=<hex>") against
// the HMAC-SHA256 of body under each secret. Every secret is tried, so the
// time taken does not depend on which one matched. Only SHA-256 signatures
// are accepted; the legacy SHA-1 X-Hub-Signature is ignored.
func verifyGitHub(secrets [][]byte, header string, body []byte) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	return verifyHMAC(secrets, hexSig, body)
}

// verifyGitea checks an X-Gitea-Signature header (Gitea's and Forgejo's:
// the hex HMAC-SHA256 of body, without GitHub's "sha256=" prefix) against
// each secret, as verifyGitHub does.
func verifyGitea(secrets [][]byte, header string, body []byte) bool {
	return verifyHMAC(secrets, header, body)
}

// verifyHMAC compares the hex signature hexSig with the HMAC-SHA256 of the
// message (its parts, in order) under every secret, in constant time:
// every secret is tried, so the time taken does not depend on which one
// matched. GitHub, Gitea and Slack sign this way.
func verifyHMAC(secrets [][]byte, hexSig string, message ...[]byte) bool {
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

// verifyGitLab compares an X-Gitlab-Token header with each configured
// token's SHA-256 digest in constant time. Comparing digests, not the tokens,
// keeps the comparison's length fixed, so a token that differs only in
// length leaks nothing.
func verifyGitLab(tokenDigests [][sha256.Size]byte, header string) bool {
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
