package dashboard

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// routes serves Prefix: the login pages and static assets to anyone, the
// app and its API to authenticated requests.
func (d *Dashboard) routes(static fs.FS) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET "+Prefix+"/static/{file}", http.StripPrefix(Prefix+"/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET "+Prefix+"/login", d.serveLogin(static))
	mux.HandleFunc("POST "+Prefix+"/login", d.serveTokenLogin)
	mux.HandleFunc("POST "+Prefix+"/logout", d.serveLogout)
	mux.Handle("GET "+Prefix+"/{$}", d.authenticated(serveFile(static, "index.html")))
	mux.Handle("GET "+Prefix+"/api/jobs", d.api(d.serveJobs))
	mux.Handle("GET "+Prefix+"/api/jobsets", d.api(d.serveJobSets))
	mux.Handle("GET "+Prefix+"/api/jobs/{namespace}/{name}", d.api(d.serveJob))
	mux.Handle("GET "+Prefix+"/api/jobsets/{namespace}/{name}", d.api(d.serveJobSet))
	mux.Handle("GET "+Prefix+"/api/logs/{namespace}/{pod}", d.api(d.serveLogs))
	mux.Handle("GET "+Prefix+"/api/watch", d.api(d.serveWatch))
	mux.Handle("POST "+Prefix+"/api/login-url", d.admitted(d.serveLoginURL))
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
	})
	return securityHeaders(mux)
}

// securityHeaders keeps pages out of frames and caches, scripts to the
// dashboard's own, and the login code out of Referer headers.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func serveFile(static fs.FS, name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeFileFS(w, r, static, name)
	})
}

// authenticated sends a browser without a session to the login page.
func (d *Dashboard) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.auth.admits(r) {
			http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// admitted answers 401 without credentials.
func (d *Dashboard) admitted(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !d.auth.admits(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="batchlet"`)
			writeError(w, http.StatusUnauthorized, "log in: open the login URL batchlet server printed, or send the admin token as a bearer token")
			return
		}
		next(w, r)
	})
}

// api answers 401 without credentials and 503 until the caches synced.
func (d *Dashboard) api(next http.HandlerFunc) http.Handler {
	return d.admitted(func(w http.ResponseWriter, r *http.Request) {
		if !d.store.isReady() {
			writeError(w, http.StatusServiceUnavailable, "the dashboard's caches are still syncing")
			return
		}
		next(w, r)
	})
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// serveLogin redeems a login code (?code=) for a session, or shows how to
// log in.
func (d *Dashboard) serveLogin(static fs.FS) http.HandlerFunc {
	page := serveFile(static, "login.html")
	return func(w http.ResponseWriter, r *http.Request) {
		code := r.URL.Query().Get("code")
		if code == "" {
			page.ServeHTTP(w, r)
			return
		}
		if !d.auth.redeemCode(code) {
			d.log.Info("dashboard login refused: unknown or used code", "remote", r.RemoteAddr)
			http.Redirect(w, r, Prefix+"/login?error=code", http.StatusSeeOther)
			return
		}
		d.startSession(w, r)
	}
}

// serveTokenLogin logs in with the admin token posted by the login form.
func (d *Dashboard) serveTokenLogin(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 8<<10)
	if !d.auth.isToken(r.PostFormValue("token")) {
		d.log.Info("dashboard login refused: wrong token", "remote", r.RemoteAddr)
		http.Redirect(w, r, Prefix+"/login?error=token", http.StatusSeeOther)
		return
	}
	d.startSession(w, r)
}

func (d *Dashboard) startSession(w http.ResponseWriter, r *http.Request) {
	c, err := d.auth.newSession()
	if err != nil {
		d.log.Error("dashboard session", "err", err)
		http.Error(w, "cannot start a session", http.StatusInternalServerError)
		return
	}
	http.SetCookie(w, c)
	d.log.Info("dashboard login", "remote", r.RemoteAddr)
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// LoginURL is the answer of POST /ui/api/login-url.
type LoginURL struct {
	URL string `json:"url"`
}

// serveLoginURL mints a one-time login URL (`batchlet dashboard`), on the
// address the request reached.
func (d *Dashboard) serveLoginURL(w http.ResponseWriter, r *http.Request) {
	code, err := d.auth.newCode()
	if err != nil {
		writeError(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, LoginURL{URL: "https://" + r.Host + Prefix + "/login?code=" + code})
}

func (d *Dashboard) serveLogout(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(SessionCookie); err == nil {
		d.auth.endSession(c.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: SessionCookie, Path: Prefix, MaxAge: -1, HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}

func (d *Dashboard) serveJobs(w http.ResponseWriter, _ *http.Request) {
	jobs := d.store.listJobs()
	rows := make([]JobRow, 0, len(jobs))
	for _, j := range jobs {
		rows = append(rows, jobRow(j))
	}
	sortRows(rows, func(r JobRow) (string, string) { return r.Namespace, r.Name })
	writeJSON(w, http.StatusOK, rows)
}

func (d *Dashboard) serveJobSets(w http.ResponseWriter, _ *http.Request) {
	sets := d.store.listJobSets()
	rows := make([]JobSetRow, 0, len(sets))
	for _, js := range sets {
		rows = append(rows, jobSetRow(js))
	}
	sortRows(rows, func(r JobSetRow) (string, string) { return r.Namespace, r.Name })
	writeJSON(w, http.StatusOK, rows)
}

func (d *Dashboard) serveJob(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	j, ok := d.store.job(ns, name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("jobs.batch %q not found in namespace %q", name, ns))
		return
	}
	from, _ := strconv.Atoi(r.URL.Query().Get("from"))
	writeJSON(w, http.StatusOK, d.store.jobDetail(j, from))
}

func (d *Dashboard) serveJobSet(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	js, ok := d.store.jobSet(ns, name)
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("jobsets.jobset.x-k8s.io %q not found in namespace %q", name, ns))
		return
	}
	writeJSON(w, http.StatusOK, d.store.jobSetDetail(js))
}

// logTailLines is how many last lines the log viewer starts with.
const logTailLines = 1000

// serveLogs streams a container's log (?container=, ?follow=1) as plain
// text, flushing as lines arrive.
func (d *Dashboard) serveLogs(w http.ResponseWriter, r *http.Request) {
	ns, pod := r.PathValue("namespace"), r.PathValue("pod")
	q := r.URL.Query()
	tail := int64(logTailLines)
	opts := &corev1.PodLogOptions{Container: q.Get("container"), Follow: q.Get("follow") == "1", TailLines: &tail}
	stream, err := d.cfg.Kube.CoreV1().Pods(ns).GetLogs(pod, opts).Stream(r.Context())
	if err != nil {
		writeError(w, http.StatusBadGateway, fmt.Sprintf("logs of pod %s/%s: %v", ns, pod, err))
		return
	}
	defer stream.Close()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Accel-Buffering", "no")
	flusher, _ := w.(http.Flusher)
	br := bufio.NewReader(stream)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if _, werr := w.Write(line); werr != nil {
				return
			}
			if flusher != nil && br.Buffered() == 0 {
				flusher.Flush()
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && r.Context().Err() == nil {
				d.log.Debug("dashboard log stream ended", "namespace", ns, "pod", pod, "err", err)
			}
			return
		}
	}
}

// serveWatch is the live-update stream (server-sent events): at most one
// "change" event per update interval, naming the kinds (jobs, jobsets,
// pods, events) that changed; pages refetch what they show.
func (d *Dashboard) serveWatch(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "streaming unsupported")
		return
	}
	sub := d.changes.subscribe()
	defer d.changes.unsubscribe(sub)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := io.WriteString(w, "retry: 2000\nevent: hello\ndata: {}\n\n"); err != nil {
		return
	}
	flusher.Flush()
	tick := d.cfg.Clock.NewTicker(d.cfg.UpdateInterval)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C():
		}
		kinds := sub.take()
		if len(kinds) == 0 {
			continue
		}
		data, _ := json.Marshal(kinds)
		if _, err := fmt.Fprintf(w, "event: change\ndata: %s\n\n", data); err != nil {
			return
		}
		flusher.Flush()
	}
}
