package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// SessionCookie names the dashboard's session cookie.
const SessionCookie = "batchlet_ui_session"

// authenticator admits requests carrying the admin token or a session, and
// mints sessions for a one-time login code or the admin token.
type authenticator struct {
	token string
	clock clock.PassiveClock
	ttl   time.Duration

	mu       sync.Mutex
	code     string               // the unused login code; "" once used
	sessions map[string]time.Time // session id -> expiry
}

func newAuthenticator(token string, c clock.PassiveClock, ttl time.Duration) *authenticator {
	return &authenticator{token: token, clock: c, ttl: ttl, sessions: map[string]time.Time{}}
}

func randomID() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random id: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

func (a *authenticator) newCode() (string, error) {
	code, err := randomID()
	if err != nil {
		return "", err
	}
	a.mu.Lock()
	a.code = code
	a.mu.Unlock()
	return code, nil
}

// redeemCode spends the login code: true once for the right code.
func (a *authenticator) redeemCode(code string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.code == "" || !equal(a.code, code) {
		return false
	}
	a.code = ""
	return true
}

func (a *authenticator) isToken(token string) bool { return token != "" && equal(a.token, token) }

func equal(a, b string) bool { return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1 }

// newSession starts a session and returns its cookie.
func (a *authenticator) newSession() (*http.Cookie, error) {
	id, err := randomID()
	if err != nil {
		return nil, err
	}
	now := a.clock.Now()
	a.mu.Lock()
	for s, exp := range a.sessions { // forget expired sessions
		if !now.Before(exp) {
			delete(a.sessions, s)
		}
	}
	a.sessions[id] = now.Add(a.ttl)
	a.mu.Unlock()
	return &http.Cookie{
		Name: SessionCookie, Value: id, Path: Prefix, MaxAge: int(a.ttl / time.Second),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode,
	}, nil
}

func (a *authenticator) endSession(id string) {
	a.mu.Lock()
	delete(a.sessions, id)
	a.mu.Unlock()
}

// admits reports whether r carries the admin token or a live session.
func (a *authenticator) admits(r *http.Request) bool {
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, _ := strings.Cut(h, " ")
		return strings.EqualFold(scheme, "Bearer") && a.isToken(strings.TrimSpace(token))
	}
	c, err := r.Cookie(SessionCookie)
	if err != nil {
		return false
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	exp, ok := a.sessions[c.Value]
	return ok && a.clock.Now().Before(exp)
}
