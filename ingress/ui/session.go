package ui

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// cookieName is the session cookie's name.
const cookieName = "hookrun_session"

// sessions signs and checks session cookies and their CSRF tokens with a
// key derived from the API token; it keeps no state.
type sessions struct {
	key      []byte   // HMAC-SHA256(token, keyLabel)
	tokenSum [32]byte // sha256 of the token, for the login compare
	ttl      time.Duration
	now      func() time.Time
}

// keyLabel makes the session key differ from anything else derived from
// the token.
const keyLabel = "hookrun ui session key v1"

func newSessions(token string, ttl time.Duration, now func() time.Time) *sessions {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(keyLabel))
	return &sessions{key: m.Sum(nil), tokenSum: sha256.Sum256([]byte(token)), ttl: ttl, now: now}
}

// tokenOK compares a submitted token with the API token in constant time
// (digests: the token's length leaks nothing either).
func (s *sessions) tokenOK(token string) bool {
	sum := sha256.Sum256([]byte(token))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
}

func (s *sessions) mac(parts ...string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(strings.Join(parts, "|")))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// issue makes a new session's cookie value: EXPIRY.ID.MAC, with EXPIRY in
// Unix seconds and ID 16 random bytes.
func (s *sessions) issue() (string, time.Time) {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(b[:])
	exp := s.now().Add(s.ttl).Truncate(time.Second)
	e := strconv.FormatInt(exp.Unix(), 10)
	return e + "." + id + "." + s.mac("session", e, id), exp
}

// check returns the session id of a cookie value whose MAC is right and
// whose expiry has not passed; ok false otherwise.
func (s *sessions) check(v string) (id string, ok bool) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return "", false
	}
	e, id, mac := parts[0], parts[1], parts[2]
	if !hmac.Equal([]byte(mac), []byte(s.mac("session", e, id))) {
		return "", false
	}
	exp, err := strconv.ParseInt(e, 10, 64)
	if err != nil || !s.now().Before(time.Unix(exp, 0)) {
		return "", false
	}
	return id, true
}

// csrf is the form token of session id.
func (s *sessions) csrf(id string) string { return s.mac("csrf", id) }

// csrfOK checks a submitted form token against session id in constant time.
func (s *sessions) csrfOK(id, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(s.csrf(id)))
}

// cookie is the session cookie carrying v until exp (v "" and exp zero:
// the cookie that deletes it). secure: the request came over TLS.
func cookie(v string, exp time.Time, secure bool) *http.Cookie {
	c := &http.Cookie{Name: cookieName, Value: v, Path: "/", HttpOnly: true, Secure: secure,
		SameSite: http.SameSiteStrictMode}
	if v == "" {
		c.MaxAge = -1
	} else {
		c.Expires = exp
	}
	return c
}
