package ui

import (
	"context"
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

// SessionStore keeps the sessions server-side (stores.SessionStore, the
// hookrun_sessions bucket): a cookie is a session only while its id is
// stored there, so log-out and revoke-all end it everywhere.
type SessionStore interface {
	Create(ctx context.Context, id string, now, expires time.Time) error
	Valid(ctx context.Context, id string, now time.Time) (bool, error)
	Delete(ctx context.Context, id string) error
	DeleteAll(ctx context.Context) (int, error)
}

// sessions issues and checks session cookies and their CSRF tokens: the
// cookie carries a random session id, signed with a key derived from the
// API token, and the session is the id's entry in the store.
type sessions struct {
	key      []byte   // HMAC-SHA256(token, keyLabel)
	tokenSum [32]byte // sha256 of the token, for the login compare
	ttl      time.Duration
	now      func() time.Time
	store    SessionStore
}

// keyLabel makes the session key differ from anything else derived from
// the token.
const keyLabel = "hookrun ui session key v1"

func newSessions(token string, ttl time.Duration, now func() time.Time, store SessionStore) *sessions {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(keyLabel))
	return &sessions{key: m.Sum(nil), tokenSum: sha256.Sum256([]byte(token)), ttl: ttl, now: now, store: store}
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

// issue starts a session: it stores a new id (32 random bytes) and returns
// its cookie value, EXPIRY.ID.MAC with EXPIRY in Unix seconds.
func (s *sessions) issue(ctx context.Context) (string, time.Time, error) {
	var b [32]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	id := base64.RawURLEncoding.EncodeToString(b[:])
	now := s.now()
	exp := now.Add(s.ttl).Truncate(time.Second)
	if err := s.store.Create(ctx, id, now, exp); err != nil {
		return "", time.Time{}, err
	}
	e := strconv.FormatInt(exp.Unix(), 10)
	return e + "." + id + "." + s.mac("session", e, id), exp, nil
}

// check returns the session id of a cookie value whose MAC is right,
// whose expiry has not passed and whose session is stored; ok false
// otherwise. err: the store could not be read.
func (s *sessions) check(ctx context.Context, v string) (id string, ok bool, err error) {
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return "", false, nil
	}
	e, id, mac := parts[0], parts[1], parts[2]
	if !hmac.Equal([]byte(mac), []byte(s.mac("session", e, id))) {
		return "", false, nil
	}
	now := s.now()
	exp, err := strconv.ParseInt(e, 10, 64)
	if err != nil || !now.Before(time.Unix(exp, 0)) {
		return "", false, nil
	}
	ok, err = s.store.Valid(ctx, id, now)
	if err != nil || !ok {
		return "", false, err
	}
	return id, true, nil
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
